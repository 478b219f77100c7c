// Public surface of the protocol layer: framing, dispatch, wire schemas, cursors.
export {
  createDispatcher,
  createMethod,
  type ConsentCheck,
  type DispatchOutcome,
  type Dispatcher,
  type JsonRpcResponse,
  type MethodHandler,
  type RequestContext,
  type RequestLogFields,
  type TransportContext,
  metaTraceparent,
} from './dispatch.js';
export { isJsonRpcResponse } from './message-checks.js';
export { type LeadingStatement } from '../leading-statement.js';
export {
  META_LOG_LEVEL,
  RequestNotices,
  type NoticeSink,
} from './request-notices.js';
export { createDiscoverMethod, type DiscoverOptions } from './discover.js';
export {
  createCursorCodec,
  type CursorCodec,
  type CursorPosition,
} from './cursor.js';
export {
  KeptResult,
  RawJson,
  serializeMessage,
  serializeMessageBytes,
} from './raw-json.js';
export {
  CancelledParamsSchema,
  CompleteParamsSchema,
  EmptyParamsSchema,
  GetPromptParamsSchema,
  META_CLIENT_CAPABILITIES,
  META_PROTOCOL_VERSION,
  PROTOCOL_VERSION,
  PaginatedParamsSchema,
  CallToolParamsSchema,
  ReadResourceParamsSchema,
  SUPPORTED_VERSIONS,
  expectedHttpHeaders,
  readableId,
  type Annotations,
  type Cacheable,
  type CompleteParams,
  type GetPromptParams,
  type Implementation,
  type InboundMessage,
  type PaginatedParams,
  type CallToolParams,
  type ReadResourceParams,
  type RequestId,
  type ResourceTemplate,
} from './wire.js';
export { LOG_LEVELS, type LogLevel } from './log-levels.js';
export {
  clientCanAnswer,
  collectAnswers,
  formElicitation,
  inputRequired,
  principalDigest,
  RequestStateCodec,
  requireClientCapabilities,
  type ConsentOutcome,
  type ElicitAnswer,
  type InputParams,
  type InputRequest,
  type InputRequiredResult,
} from './input-required.js';
export {
  streamedResponse,
  type RequestStreamControl,
} from './request-stream.js';
export {
  ListenParamsSchema,
  type FanoutMessages,
  META_SUBSCRIPTION_ID,
  StreamingResult,
  SubscriptionFilterSchema,
  SubscriptionMessages,
  type ListenParams,
  type ResponseStream,
  type StreamSink,
  type SubscriptionFilter,
} from './stream.js';
