// The audio thread's half of the microphone (voice.js): two AudioWorklet processors.
//
// "microphone" runs in a 16 kHz AudioContext (the browser resamples the device to it) and
// turns the float samples it is given, 128 at a time, into signed 16-bit little-endian PCM
// chunks of CHUNK_SAMPLES (50 ms: inside the 20-100 ms the gateway asks for), posted to the
// page as transferable buffers, which sends each as one audio-in frame.
//
// "speaker" runs in a 24 kHz AudioContext and plays the agent's speech: the page posts each
// audio-out chunk with its model turn, the processor queues it and plays the queue in
// order. Barge-in is a `{drop: turn}` message: every queued chunk of that turn goes at once,
// and so does any chunk of it that still arrives (it was sent before the gateway heard the
// interruption). Comparing turn numbers is exact, where draining "what was sent before"
// would be a guess. `{flush: true}` drops everything queued (the turn was stopped). The
// processor reports what it played and dropped, for the page's state.

const CHUNK_SAMPLES = 800;

class Microphone extends AudioWorkletProcessor {
  constructor() {
    super();
    this.chunk = new Int16Array(CHUNK_SAMPLES);
    this.filled = 0;
  }

  process(inputs) {
    const samples = inputs[0]?.[0];
    if (samples) {
      for (let i = 0; i < samples.length; i += 1) {
        const clamped = Math.max(-1, Math.min(1, samples[i]));
        this.chunk[this.filled] = clamped < 0 ? clamped * 0x8000 : clamped * 0x7fff;
        this.filled += 1;
        if (this.filled === CHUNK_SAMPLES) {
          this.port.postMessage(this.chunk.buffer, [this.chunk.buffer]);
          this.chunk = new Int16Array(CHUNK_SAMPLES);
          this.filled = 0;
        }
      }
    }
    return true;
  }
}

class Speaker extends AudioWorkletProcessor {
  constructor() {
    super();
    this.queue = []; // [{turn, samples: Float32Array, at: index of the next sample}]
    this.droppedTurn = null;
    this.played = 0; // samples
    this.dropped = 0; // samples
    this.port.onmessage = ({ data }) => {
      if (data.flush) this.#drop(null);
      else if (data.drop !== undefined) this.#drop(data.drop);
      else if (data.turn !== this.droppedTurn) this.queue.push({ turn: data.turn, samples: toFloat(data.pcm), at: 0 });
      else this.dropped += data.pcm.byteLength / 2;
    };
  }

  /** Drops the queued chunks of ``turn`` and its later arrivals; null: all queued now. */
  #drop(turn) {
    if (turn !== null) this.droppedTurn = turn;
    const kept = [];
    for (const chunk of this.queue) {
      if (turn === null || chunk.turn === turn) this.dropped += chunk.samples.length - chunk.at;
      else kept.push(chunk);
    }
    this.queue = kept;
    this.#report();
  }

  process(_inputs, outputs) {
    const out = outputs[0][0];
    let written = 0;
    while (written < out.length && this.queue.length) {
      const chunk = this.queue[0];
      const take = Math.min(out.length - written, chunk.samples.length - chunk.at);
      out.set(chunk.samples.subarray(chunk.at, chunk.at + take), written);
      written += take;
      chunk.at += take;
      if (chunk.at === chunk.samples.length) {
        this.queue.shift();
        this.played += chunk.samples.length;
        this.#report();
      }
    }
    out.fill(0, written);
    return true;
  }

  #report() {
    const queued = this.queue.reduce((sum, chunk) => sum + chunk.samples.length - chunk.at, 0);
    this.port.postMessage({ played: this.played, dropped: this.dropped, queued });
  }
}

function toFloat(pcm) {
  const ints = new Int16Array(pcm);
  const floats = new Float32Array(ints.length);
  for (let i = 0; i < ints.length; i += 1) floats[i] = ints[i] / 0x8000;
  return floats;
}

registerProcessor("microphone", Microphone);
registerProcessor("speaker", Speaker);
