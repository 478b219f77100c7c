// Public surface of tools/: the tools/list and tools/call handlers app.ts registers, and the tools.
export {
  createCallToolMethod,
  createListToolsMethod,
  TOOLS_TTL_MS,
} from './tool-methods.js';
export {
  defineTool,
  textResult,
  toolError,
  type ContentBlock,
  type Tool,
  type ToolResult,
} from './tool.js';
export { conformanceFixtureTools } from './conformance-fixtures.js';
