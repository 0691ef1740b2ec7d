// Client tools: what this browser can execute when the agent asks. Each returns the
// browser's own account of what happened, which becomes the tool result verbatim.
// A tool's ``settle(args)`` tells, from the page alone, the result of a call begun before
// a reload whose result was lost (null: the page shows it did not happen, so perform it).

/**
 * @param {import("./nav.js").AppNavigator} navigator
 * @returns {Record<string, ((args: object|null, surface: string) => object) & {settle?: Function}>}
 */
export function clientTools(navigator) {
  const navigateToScreen = (args, surface) => {
    if (!args || typeof args.screenId !== "string" || !args.screenId) {
      return { status: "error", message: "screenId가 없는 화면 이동 요청이라 실행하지 않았습니다." };
    }
    return navigator.navigate(args.screenId, {
      origin: surface,
      orgScope: typeof args.orgScope === "string" ? args.orgScope : undefined,
      payload: args.payload && typeof args.payload === "object" ? args.payload : undefined,
    });
  };
  navigateToScreen.settle = (args) => {
    const screen = navigator.current;
    if (!screen || screen.screenId !== args.screenId) return null;
    return { status: "navigated", message: `'${screen.name}' 화면을 열었습니다.` };
  };
  return { navigateToScreen };
}

/** The gateway's declarations of the tools this browser implements, as RunAgentInput.tools. */
export function declaredTools(catalog, implemented) {
  const declared = catalog.filter((tool) => tool.name in implemented);
  for (const tool of catalog) {
    if (!(tool.name in implemented)) console.warn(`client tool ${tool.name} is not implemented here`);
  }
  return declared.map(({ name, description, parameters }) => ({ name, description, parameters }));
}
