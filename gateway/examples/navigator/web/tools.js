// Client tools: what this browser can execute when the agent asks. Each returns the
// browser's own account of what happened, which becomes the tool result verbatim.

/**
 * @param {import("./nav.js").AppNavigator} navigator
 * @returns {Record<string, (args: object|null, surface: string) => object>}
 */
export function clientTools(navigator) {
  return {
    navigateToScreen(args, surface) {
      if (!args || typeof args.screenId !== "string" || !args.screenId) {
        return { status: "error", message: "screenId가 없는 화면 이동 요청이라 실행하지 않았습니다." };
      }
      return navigator.navigate(args.screenId, {
        origin: surface,
        orgScope: typeof args.orgScope === "string" ? args.orgScope : undefined,
        payload: args.payload && typeof args.payload === "object" ? args.payload : undefined,
      });
    },
  };
}

/** The gateway's declarations of the tools this browser implements, as RunAgentInput.tools. */
export function declaredTools(catalog, implemented) {
  const declared = catalog.filter((tool) => tool.name in implemented);
  for (const tool of catalog) {
    if (!(tool.name in implemented)) console.warn(`client tool ${tool.name} is not implemented here`);
  }
  return declared.map(({ name, description, parameters }) => ({ name, description, parameters }));
}
