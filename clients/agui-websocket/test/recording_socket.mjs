// A WebSocket for tests without a gateway: it opens at once and keeps what the connection
// sends (JSON frames parsed, binary frames as they are); a test plays the gateway's side.

/** A WebSocket that opens at once and keeps what the connection sends. */
export class RecordingSocket extends EventTarget {
  static last = null;

  constructor(url) {
    super();
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    RecordingSocket.last = this;
    queueMicrotask(() => {
      this.readyState = 1;
      this.dispatchEvent(new Event("open"));
    });
  }

  send(data) {
    this.sent.push(typeof data === "string" ? JSON.parse(data) : data);
  }

  receive(event) {
    const message = new Event("message");
    message.data = JSON.stringify(event);
    this.dispatchEvent(message);
  }

  /** A binary frame from the gateway, as a browser gives it with binaryType "arraybuffer". */
  receiveBinary(bytes) {
    const message = new Event("message");
    message.data = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    this.dispatchEvent(message);
  }

  close() {
    this.readyState = 3;
  }
}
