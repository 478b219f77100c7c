// Public surface of tools/: the tools/list and tools/call handlers app/ registers, and the tools.
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
  type InputRequiredResult,
  type ToolInput,
  type Tool,
  type ToolResult,
} from './tool.js';
export { createFetchTool, type ReadResource } from './fetch-tool.js';
export { createQueryTool } from './query-tool.js';
export { createExplainTool } from './explain-tool.js';
export { type SqlToolDependencies } from './sql-tool-dependencies.js';
export { createSqlGuard, SQL_GUARD_DEFAULTS } from './sql-guard/index.js';
export { missingSensitiveEntries } from './statements/sql-guard-statements.js';
export {
  limitToolCalls,
  TOOL_LIMIT,
  ToolCallLimiter,
  type RoleToolLimits,
  type ToolLimits,
} from './tool-limits.js';
export {
  createSearchTool,
  type SearchableCollection,
  type SearchDependencies,
} from './search-tool.js';
