// The chat's microphone: a live (voice) turn on the thread's /ws connection (docs/voice.md).
//
// One toggle button beside Send, shown only when the gateway says the agent can go live
// (GET /capabilities: `custom.gateway.live`). Pressed, it asks for the microphone, sends
// `liveStart` with the page's client tools, and once `gateway.live.started` arrives streams
// what the microphone hears as audio-in frames (a 4-byte header, then 16 kHz s16le PCM made
// by the "microphone" worklet, voice-worklet.js). The agent's speech comes back as audio-out
// frames, played at 24 kHz by the "speaker" worklet in the order they came; on
// `gateway.live.interrupted` (the person spoke over the agent) the speaker drops what it
// holds of that turn. Pressed again, it sends `liveStop`; the gateway finishes the
// transcripts and ends the run, and the speaker plays out what it has. A dropped connection
// does not end the turn: the gateway holds it for this tab (GATEWAY_LIVE_REATTACH_SECONDS),
// the microphone stays open, and it speaks again once the reconnect says
// `gateway.live.resumed`.
//
// The transcripts, tool rows, approval cards and Stop are the chat's as for any run (chat.js):
// they come as ordinary AG-UI events (an approval as `gateway.live.approval`, answered with
// `liveResume`). This module knows only the audio, the button and the turn's state,
// which the button says (aria-pressed, its label) and a status line announces.

import { getJson } from "./boot.js";
import { h } from "./dom.js";

const AUDIO_IN = 0x01;
const AUDIO_OUT = 0x02;
const HEADER_VERSION = 0x01;
const HEADER_BYTES = 4;
const INPUT_RATE = 16000;
const OUTPUT_RATE = 24000;
const STARTED = "gateway.live.started";
const INTERRUPTED = "gateway.live.interrupted";
const RESUMED = "gateway.live.resumed";
/** A live turn's approval: the Interrupt a typed run would end on, asked mid-turn. */
export const LIVE_APPROVAL = "gateway.live.approval";

// What the person is told of the turn, by state. The button keeps one name (a toggle's
// name says what it does, aria-pressed whether it is on); the status line announces the rest.
const LABEL = "음성으로 말하기";
const STATUS = {
  off: "",
  starting: "마이크를 연결하는 중…",
  live: "듣고 있어요. 말씀하세요.",
  stopping: "음성 대화를 마치는 중…",
  held: "연결이 끊겼습니다. 다시 연결되면 이어서 들어요.",
};
// How long the page keeps its side of a turn whose connection dropped: as long as the
// gateway holds the turn for a reattach (GATEWAY_LIVE_REATTACH_SECONDS' default).
const HOLD_MS = 30_000;

export class Voice {
  /**
   * @param {HTMLElement} app  the page (its `.composer-actions` gets the button)
   * @param {object} options
   * @param {import("./agui-websocket/connection.js").ThreadConnection} options.client
   * @param {string} options.userId   to ask /capabilities as
   * @param {() => object[]} options.tools  the client tools a turn declares
   * @param {(text: string) => void} options.onRefused  says why a turn could not start
   */
  constructor(app, { client, userId, tools, onRefused }) {
    this.client = client;
    this.userId = userId;
    this.tools = tools;
    this.onRefused = onRefused;
    this.state = "off";
    this.runId = null;
    this.mic = null; // {context, stream, node} while the microphone is open
    this.holdTimer = null; // while "held": ends the page's side if no reattach resumes the turn
    this.speaker = null; // {context, node}, made on the first press and kept
    // What the speaker did, for the page's own use (tests): samples played and dropped.
    this.stats = { sentBytes: 0, played: 0, dropped: 0, queued: 0 };
    window.__voice = this.stats;
    this.button = h(
      "button",
      { type: "button", class: "btn mic", id: "mic", hidden: true, "aria-pressed": "false" },
      h("span", { class: "mic-icon", "aria-hidden": "true" }, "🎤"),
      h("span", { class: "mic-label" }, LABEL),
    );
    this.status = h("span", { class: "mic-status", role: "status" });
    app.querySelector(".composer-actions")?.prepend(this.status, this.button);
  }

  /** Shows the button if the agent can go live. */
  async start() {
    this.button.addEventListener("click", () => this.#toggle());
    const capabilities = await getJson("/capabilities", this.userId).catch(() => ({}));
    this.button.hidden = !capabilities.custom?.gateway?.live;
  }

  get active() {
    return this.state !== "off";
  }

  /** Whether the turn is under way: what the person types goes into it (docs/voice.md). */
  get listening() {
    return this.state === "live";
  }

  /** Whether the button may be pressed: a turn starts only on an open, idle thread. */
  enable(canStart) {
    this.button.disabled = this.state === "stopping" || (this.state === "off" && !canStart);
  }

  // --- what the connection brings -------------------------------------------------------

  /** An AG-UI event of the thread. */
  event(event, run) {
    if (event.type === "CUSTOM" && event.name === STARTED && this.state === "starting") {
      this.#show("live");
    } else if (event.type === "CUSTOM" && event.name === RESUMED && this.state === "held") {
      // The reconnect found the turn the gateway held for this tab: the microphone speaks again.
      clearTimeout(this.holdTimer);
      this.#show("live");
    } else if (event.type === "CUSTOM" && event.name === RESUMED && !this.active) {
      // The gateway held the turn for this tab, but the page has no microphone for it any
      // more (a reload, or it waited too long): end the turn there too.
      this.client.stopLive();
    } else if (event.type === "CUSTOM" && event.name === INTERRUPTED && this.speaker) {
      this.speaker.node.port.postMessage({ drop: event.value?.turn });
    } else if (event.type === "RUN_ERROR" && this.state === "starting") {
      // A refused liveStart (in a run under its runId, or one of the gateway's own when the
      // frame failed): no turn was opened. The chat shows the error line.
      this.#end();
    } else if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") {
      if (!this.active || run.runId !== this.runId) return;
      // liveStop lets the speaker play out the reply; a Stop (cancel) or a failure silences it.
      if (event.type === "RUN_ERROR" || event.outcome?.type === "cancelled") this.#silence();
      this.#end();
    }
  }

  /** A binary frame: the agent's speech, played unless its turn was dropped. */
  heard(frame) {
    if (!this.speaker || !this.active || frame.byteLength < HEADER_BYTES) return;
    const view = new DataView(frame);
    if (view.getUint8(0) !== AUDIO_OUT || view.getUint8(1) !== HEADER_VERSION) return;
    const pcm = frame.slice(HEADER_BYTES);
    this.speaker.node.port.postMessage({ turn: view.getUint16(2), pcm }, [pcm]);
  }

  /** The connection is not open. A turn under way is held, as the gateway holds it for this
   * tab's reattach: the speaker drops what it had, the microphone stays open but sends
   * nothing until `gateway.live.resumed`; past HOLD_MS the page ends its side. A turn still
   * starting or stopping ends here (the reattach's `gateway.live.resumed` ends it there). */
  disconnected() {
    if (!this.active || this.state === "held") return;
    this.#silence();
    if (this.state !== "live") return this.#end();
    this.#show("held");
    this.holdTimer = setTimeout(() => this.#end(), HOLD_MS);
  }

  #silence() {
    this.speaker?.node.port.postMessage({ flush: true });
  }

  // --- the button -----------------------------------------------------------------------

  async #toggle() {
    if (this.state === "off") await this.#begin();
    else if (this.state === "starting" || this.state === "live") this.#stop();
    else if (this.state === "held") this.#end(); // no connection to stop it on: it ends there on resuming
  }

  async #begin() {
    this.#show("starting");
    // Both audio contexts are made before the first await, inside the press, so the
    // browser lets them run (a context made later may stay suspended).
    const speakerContext = this.speaker ? null : new AudioContext({ sampleRate: OUTPUT_RATE });
    const micContext = new AudioContext({ sampleRate: INPUT_RATE });
    try {
      this.speaker ??= await this.#openSpeaker(speakerContext);
      await this.speaker.context.resume();
      this.mic = await this.#openMicrophone(micContext);
    } catch (error) {
      micContext.close();
      console.warn("the microphone could not be opened", error);
      this.#end();
      this.onRefused("마이크를 열 수 없습니다. 브라우저에서 마이크 사용을 허용했는지 확인해 주세요.");
      return;
    }
    if (this.state !== "starting") return this.#closeMicrophone(); // stopped meanwhile
    this.runId = this.client.startLive({ tools: this.tools() });
    if (!this.runId) {
      this.#end();
      this.onRefused("연결되지 않아 음성 대화를 시작하지 못했습니다.");
    }
  }

  #stop() {
    this.#show("stopping");
    this.#closeMicrophone();
    this.client.stopLive();
  }

  #end() {
    clearTimeout(this.holdTimer);
    this.#closeMicrophone();
    this.runId = null;
    this.#show("off");
  }

  #show(state) {
    this.state = state;
    this.button.setAttribute("aria-pressed", String(["starting", "live", "held"].includes(state)));
    this.button.dataset.state = state;
    this.status.textContent = STATUS[state];
    this.enable(true);
  }

  // --- audio ----------------------------------------------------------------------------

  async #openSpeaker(context) {
    await context.audioWorklet.addModule(new URL("./voice-worklet.js", import.meta.url));
    const node = new AudioWorkletNode(context, "speaker", { numberOfInputs: 0, outputChannelCount: [1] });
    node.port.onmessage = ({ data }) => Object.assign(this.stats, data);
    node.connect(context.destination);
    return { context, node };
  }

  async #openMicrophone(context) {
    const stream = await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
    try {
      await context.resume();
      await context.audioWorklet.addModule(new URL("./voice-worklet.js", import.meta.url));
      const node = new AudioWorkletNode(context, "microphone", { numberOfOutputs: 0 });
      node.port.onmessage = ({ data }) => this.#send(data);
      context.createMediaStreamSource(stream).connect(node);
      return { context, stream, node };
    } catch (error) {
      for (const track of stream.getTracks()) track.stop();
      throw error;
    }
  }

  #closeMicrophone() {
    if (!this.mic) return;
    for (const track of this.mic.stream.getTracks()) track.stop();
    this.mic.node.port.onmessage = null;
    this.mic.context.close();
    this.mic = null;
  }

  /** One audio-in frame; only once the gateway has started the turn (earlier is refused). */
  #send(pcm) {
    if (this.state !== "live") return;
    const frame = new Uint8Array(HEADER_BYTES + pcm.byteLength);
    frame.set([AUDIO_IN, HEADER_VERSION, 0, 0]);
    frame.set(new Uint8Array(pcm), HEADER_BYTES);
    if (this.client.sendBinary(frame)) this.stats.sentBytes += pcm.byteLength;
  }
}
