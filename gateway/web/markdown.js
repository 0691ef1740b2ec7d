// Markdown as the page shows it: markdown-it parses with raw HTML off, so a `<script>` in a
// reply is text, and DOMPurify cleans what markdown-it made, a second layer in case a
// parser bug lets markup through. Both are vendored (vendor/README.md says which versions).

import markdownit from "./vendor/markdown-it/markdown-it.esm.min.mjs";
import DOMPurify from "./vendor/dompurify/purify.es.mjs";

const replies = markdownit({ html: false, breaks: true, linkify: false, typographer: false });

// A2UI's Text takes "simple markdown": no HTML, images or links (basic_catalog.json).
const simple = markdownit({ html: false, breaks: true, linkify: false, typographer: false }).disable([
  "image",
  "link",
  "autolink",
  "reference",
]);

const purifier = DOMPurify();
purifier.addHook("afterSanitizeAttributes", (node) => {
  // A link in a reply opens beside the app, and the page it opens cannot reach back.
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

const FORBID_TAGS = ["style", "form", "input", "button", "textarea", "select"];

/** A reply's text as a DOM fragment. */
export function renderReply(text) {
  const fragment = purifier.sanitize(replies.render(text), { RETURN_DOM_FRAGMENT: true, FORBID_TAGS });
  // Tables are wider than a chat bubble: each scrolls in a box of its own, not the bubble.
  for (const table of fragment.querySelectorAll("table")) {
    const box = document.createElement("div");
    box.className = "table-scroll";
    box.tabIndex = 0; // a keyboard can scroll it too
    table.replaceWith(box);
    box.append(table);
  }
  return fragment;
}

/** An A2UI Text's value as a DOM fragment: inline markdown, no links or images. */
export function renderSimple(text) {
  return purifier.sanitize(simple.render(text), {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: [...FORBID_TAGS, "a", "img"],
  });
}

/** An A2UI Text's value inside a line (a heading, a caption, a button's label). */
export function renderSimpleInline(text) {
  return purifier.sanitize(simple.renderInline(text), {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: [...FORBID_TAGS, "a", "img"],
  });
}

/**
 * The text of a message that streams in: chunks are added as they come, and the markdown
 * is drawn again at most once a frame, since a half-written list or table only looks
 * right once its next chunk has come.
 */
export class StreamedMarkdown {
  /**
   * @param {HTMLElement} el       where the rendered text goes
   * @param {() => void} onDrawn   called after each drawing (the transcript may follow it)
   */
  constructor(el, onDrawn = () => {}) {
    this.el = el;
    this.onDrawn = onDrawn;
    this.text = "";
    this.frame = 0;
  }

  set(text) {
    this.text = text;
    this.draw();
  }

  append(delta) {
    this.text += delta;
    if (!this.frame) this.frame = requestAnimationFrame(() => this.draw());
  }

  draw() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.el.replaceChildren(renderReply(this.text));
    this.onDrawn();
  }
}
