// The thread door (docs/threads.md) as the page calls it: list and search a user's threads,
// read one, rename, archive or pin it, delete it. Every call carries the page's identity the
// way the gateway's dev mode reads it (`?user=` and `X-Gateway-User`); a refusal becomes a
// ThreadDoorError with the gateway's code, so the sidebar can say what went wrong.

export class ThreadDoorError extends Error {
  /** @param {number} status  @param {string} code  @param {string} message */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export class ThreadDoor {
  /**
   * @param {object} options
   * @param {string} options.userId   the dev identity (GATEWAY_AUTH=dev); "" when a token is used
   * @param {string} [options.base]   where the gateway is (the page's origin by default)
   * @param {() => Record<string, string>} [options.headers]  extra headers (a bearer token)
   */
  constructor({ userId, base = "", headers = () => ({}) }) {
    this.userId = userId;
    this.base = base;
    this.headers = headers;
  }

  /**
   * One page of the user's threads.
   * @param {{q?: string, archived?: "false"|"true"|"all", cursor?: string|null, limit?: number}} query
   * @returns {Promise<{threads: object[], nextCursor: string|null}>}
   */
  list({ q = "", archived = "false", cursor = null, limit = 30 } = {}) {
    const params = { archived, limit: String(limit) };
    if (q) params.q = q;
    if (cursor) params.cursor = cursor;
    return this.#call("GET", "/threads", params);
  }

  /** @returns {Promise<object>} the thread's Summary */
  get(threadId) {
    return this.#call("GET", `/threads/${encodeURIComponent(threadId)}`);
  }

  /**
   * @param {string} threadId
   * @param {{title?: string, archived?: boolean, pinned?: boolean, metadata?: object}} change
   * @returns {Promise<object>} the thread's Summary as it now is
   */
  update(threadId, change) {
    return this.#call("PATCH", `/threads/${encodeURIComponent(threadId)}`, {}, change);
  }

  /** Erases the thread (204). */
  remove(threadId) {
    return this.#call("DELETE", `/threads/${encodeURIComponent(threadId)}`);
  }

  async #call(method, path, params = {}, body = undefined) {
    const url = new URL(this.base + path, location.href);
    if (this.userId) url.searchParams.set("user", this.userId);
    for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
    const headers = { Accept: "application/json", ...this.headers() };
    if (this.userId) headers["X-Gateway-User"] = this.userId;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.status === 204) return null;
    const answer = await response.json().catch(() => null);
    if (!response.ok) {
      throw new ThreadDoorError(response.status, answer?.code ?? `HTTP_${response.status}`, answer?.message ?? "");
    }
    return answer;
  }
}
