// Which official client a harness drives: @ag-ui/client 1.0 by default, or with
// AGUI_CLIENT=0 the 0.0.59 that CopilotKit 1.74 bundles (installed as @ag-ui/client-0).
export const OLD_CLIENT = process.env.AGUI_CLIENT === "0";
export const client = await import(OLD_CLIENT ? "@ag-ui/client-0" : "@ag-ui/client");
