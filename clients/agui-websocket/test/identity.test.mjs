// The client instance identity: kept across a reload, shared within a page, new in a
// duplicated tab (whose storage is a copy). No gateway needed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ActionLedger, claimInstance, newId, WebSocketAgent } from "../index.js";

const mint = () => newId("client");

/** The ledger module as another page (tab) loads it: a module instance of its own. */
async function anotherPage() {
  return import(`../src/ledger.js?page=${newId("page")}`);
}

test("a reload finds the identity and the ledger it left", async () => {
  const storage = new Map();
  const unload = new AbortController();
  const first = await claimInstance(mint, storage, { signal: unload.signal });
  new ActionLedger(storage).started({ id: "call-1", name: "navigateToScreen", args: {} });
  unload.abort(); // the old page is gone: nobody answers for it
  const reloaded = await anotherPage();
  assert.equal(await reloaded.claimInstance(mint, storage), first);
  assert.equal(new ActionLedger(storage).get("call-1").state, "started");
});

test("a duplicated tab, its storage a copy of a live tab's, takes a new identity and no ledger", async () => {
  const storage = new Map();
  const release = new AbortController();
  const live = await claimInstance(mint, storage, { signal: release.signal });
  new ActionLedger(storage).started({ id: "call-1", name: "navigateToScreen", args: {} });
  const copy = new Map(storage);
  const duplicate = await anotherPage();
  try {
    const id = await duplicate.claimInstance(mint, copy);
    assert.notEqual(id, live);
    assert.equal(new ActionLedger(copy).get("call-1"), undefined, "the live tab's actions are not the copy's");
  } finally {
    release.abort();
  }
});

test("two agents in one page share the identity and one ledger", async () => {
  const storage = new Map();
  const url = "ws://127.0.0.1:9/ws";
  const one = new WebSocketAgent({ url, storage });
  const two = new WebSocketAgent({ url, storage });
  try {
    assert.equal(await one.clientId, await two.clientId);
    assert.equal(one.ledger, two.ledger);
    assert.equal(one.clone().ledger, one.ledger);
    assert.equal(await one.clone().clientId, await one.clientId);
  } finally {
    one.close();
    two.close();
  }
});
