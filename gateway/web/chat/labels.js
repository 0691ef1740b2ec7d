// The chat's words. The gateway speaks in codes, states and English sentences meant for
// developers; these tables say the same in Korean for the user: a tool's name, where its
// call stands, how it turned out, why it ended without the browser's result, a refusal, a
// notice, a reply that did not finish, the connection. `readResult` words a tool's outcome
// for its row in the timeline (tool-activity.js). What only the hosting page knows (its
// agent's name, greeting, examples and tools) it says once with `describeAgent`.

/** Where the chat can be shown, by the value of the page's `data-chat-mode`. */
export const MODES = { "side-panel": "패널", "full-screen": "전체 화면", modal: "모달" };

/**
 * The hosting page's agent, in the words the chat names it with. The generic page (main.js)
 * leaves these general; a page built for one agent (the demo's app.js) names its bot, greets
 * with what it can do, offers examples and says what its tools are called and are about.
 * @type {{name: string, greeting: string, examples: string[],
 *   toolLabels: Record<string, string>, toolTargets: Record<string, (args: object) => string>}}
 */
export const AGENT = {
  name: "도우미",
  greeting: "안녕하세요! 무엇을 도와드릴까요?",
  examples: [],
  toolLabels: {},
  toolTargets: {},
};

/** Says what the page knows of its agent; call it before the chat starts. */
export function describeAgent(words) {
  Object.assign(AGENT, words);
}

const STATUS_LABELS = {
  ok: "완료",
  success: "완료",
  done: "완료",
  navigated: "이동 완료",
  denied: "권한 없음",
  not_found: "없는 화면",
  not_allowed_here: "이 창에서는 이동 불가",
  error: "실패",
  no_result: "결과 없음",
  approved: "승인됨",
  rejected: "거절됨",
  cancelled: "취소됨",
};
const SUCCESS_STATUSES = new Set(["navigated", "approved", "ok", "success", "done"]);

export const STATE_LABELS = {
  running: "실행 중",
  waiting: "브라우저에서 실행 중",
  pending: "결과 대기 중",
  elsewhere: "다른 창의 요청 · 그 창에서 실행됩니다",
  approval: "승인 대기 중",
};

// Why a call ended without the browser's result, as the gateway says it, in the user's words.
const REASON_LABELS = {
  timeout: "브라우저가 제한 시간 안에 결과를 보내지 않았습니다.",
  superseded: "새 메시지를 보내서 이 요청은 닫혔습니다.",
  "the user stopped the run": "응답을 중지해서 실행하지 않았습니다.",
  "the approval expired": "승인 시간이 지나 거절로 처리되었습니다.",
  "the live turn ended before an answer": "음성 대화가 끝나 실행하지 않았습니다.",
};
// An approval card a live turn asked, left unanswered when the turn ended (the gateway
// rejected the call then: docs/voice.md, Approvals).
export const LIVE_TURN_ENDED = "음성 대화가 끝나 거절되었습니다";
const INTERRUPTED_CALL = "게이트웨이가 다시 시작되어 이 작업이 중단되었습니다.";

// How a reply that did not finish ended (``metadata.ended`` in a snapshot).
export const ENDED_LINES = {
  stopped: ["stopped-line", "■ 응답을 중지했습니다."],
  failed: ["error-line", "⚠ 오류로 응답이 끊겼습니다."],
  interrupted: ["error-line", "⚠ 게이트웨이가 다시 시작되어 응답이 중단되었습니다."],
};

// A reply the person spoke over (``metadata.ended: "bargedIn"``, docs/voice.md): kept as far as
// it was heard, and marked where it stands, live and in a snapshot alike.
export const BARGED_IN = "✂ 말씀하셔서 여기서 멈췄습니다.";

// What a refusal or failure means to the user, by its code; the gateway's own sentence
// (English, for developers) stays in the line's tooltip.
const ERROR_LABELS = {
  UNAUTHORIZED: "로그인이 필요하거나 만료되었습니다. 페이지를 새로고침해 주세요.",
  ACCESS_DENIED: "이 대화에 접근할 수 없습니다. 새 대화를 시작해 주세요.",
  VALIDATION_ERROR: "요청을 처리할 수 없습니다.",
  RATE_LIMIT_EXCEEDED: "요청이 너무 잦습니다. 잠시 후 다시 시도해 주세요.",
  SESSION_BUSY: "아직 응답 중입니다. 끝난 뒤에 다시 보내 주세요.",
  SERVICE_QUOTA_EXCEEDED: "사용 한도를 넘었습니다. 관리자에게 문의해 주세요.",
  SERVICE_UNAVAILABLE: "게이트웨이가 다시 시작하는 중입니다. 잠시 후 다시 보내 주세요.",
  AGENT_ERROR: "에이전트가 응답하지 못했습니다. 잠시 후 다시 시도해 주세요.",
  INTERNAL_ERROR: "게이트웨이에 문제가 생겼습니다. 잠시 후 다시 시도해 주세요.",
  STORE_UNAVAILABLE: "게이트웨이가 저장소에 연결하지 못했습니다. 잠시 후 다시 보내 주세요.",
  RUN_INTERRUPTED: "응답하던 게이트웨이가 멈춰 응답이 중단되었습니다. 다시 보내 주세요.",
  THREAD_TAKEN_OVER: "다른 게이트웨이가 이 대화를 이어받았습니다. 새로고침하면 최신 대화를 볼 수 있습니다.",
};
export const NOTICE_LABELS = {
  NOTHING_TO_CANCEL: "중지할 응답이 없습니다.",
  CANCEL_REQUESTED: "응답을 중지하는 중입니다.",
  INTERRUPT_ALREADY_ANSWERED: "이미 답한 승인 요청입니다.",
  INTERRUPT_EXPIRED: "승인 시간이 지나 거절로 처리되었습니다.",
};
// Notices the tab causes itself (a kept result sent again, a reconnect that missed nothing,
// an input sent again that the gateway had): nothing to tell the user.
export const QUIET_NOTICES = new Set(["TOOL_RESULT_IGNORED", "UP_TO_DATE", "RUN_DEDUPED"]);

/** The status line's words for the connection (agui-websocket/connection.js's states). */
export function connectionLabel(state, detail) {
  const labels = { connecting: "연결 중…", syncing: "대화 불러오는 중…", open: "연결됨", reconnecting: "재연결 중…" };
  let label = labels[state];
  if (state === "reconnecting" && detail.inMs) label = `재연결 중… ${Math.ceil(detail.inMs / 1000)}초 후`;
  return label;
}

/** A RUN_ERROR in the user's words: an input refused as invalid after a press was the card's. */
export function runErrorLabel(code, onCard) {
  return onCard && code === "VALIDATION_ERROR"
    ? "카드의 요청을 처리할 수 없습니다."
    : (ERROR_LABELS[code] ?? "문제가 생겼습니다. 잠시 후 다시 시도해 주세요.");
}

/** A call rejected on its approval card, live (tool-activity.js) and restored alike. */
export const USER_REJECTED = { tone: "failed", label: "거절됨", detail: "사용자가 거절했습니다." };
// A call whose run ended in an error (a crash, a lost lease) before its result came.
export const CUT_OFF = { tone: "warn", label: "중단됨", detail: "결과가 오기 전에 응답이 끊겼습니다." };

/** What a tool result means for the timeline: success, failure, or neither. */
export function readResult(value, error) {
  if (error) return { tone: "failed", label: "실패", detail: errorLabel(error) };
  if (value && typeof value === "object" && !Array.isArray(value)) {
    // A call the user said no to on its approval card: the gateway stores why in English
    // for the model; the row reads as it did when the user pressed 거절.
    // Rejected for them (the approval expired, the live turn ended), it says why.
    if (value.status === "rejected" && value.error) {
      return REASON_LABELS[value.reason] ? { ...USER_REJECTED, detail: REASON_LABELS[value.reason] } : USER_REJECTED;
    }
    if (value.error) return { tone: "failed", label: "실패", detail: errorLabel(value.error) };
    if (typeof value.status === "string") {
      const ok = SUCCESS_STATUSES.has(value.status);
      return {
        tone: ok ? "ok" : "failed",
        label: STATUS_LABELS[value.status] ?? value.status,
        detail: value.message ? String(value.message) : reasonLabel(value.reason),
      };
    }
    if (Array.isArray(value.screens)) {
      return value.screens.length
        ? { tone: "ok", label: `${value.screens.length}개 찾음`, detail: value.screens.map((s) => s.name).join(", ") }
        : { tone: "warn", label: "찾지 못함", detail: "열 수 있는 화면이 없습니다." };
    }
  }
  return { tone: "ok", label: "완료", detail: typeof value === "string" ? value : "" };
}

function reasonLabel(reason) {
  if (!reason) return "";
  return REASON_LABELS[reason] ?? "브라우저의 결과 없이 끝났습니다.";
}

/** A tool's own error text, except the gateway's, which is in English for the model. */
function errorLabel(error) {
  const text = String(error);
  return text.startsWith("interrupted:") ? INTERRUPTED_CALL : text;
}
