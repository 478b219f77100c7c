// Observability (issue 35): Prometheus metrics, OpenTelemetry traces and the admin listener that
// serves the metrics and probes. A leaf: it imports nothing from src but version.ts, and every
// other folder may record into it.
export {
  METRICS,
  forgetSources,
  metricsExposition,
  observePool,
  observeSources,
} from './metrics.js';
export {
  currentTraceId,
  startTracing,
  traceAuthentication,
  tracedApplicationName,
  traceHttpRequest,
  traceRequest,
  traceStep,
  tracingEnabled,
  type EndRequestSpan,
  type RequestSpanFields,
} from './tracing.js';
export {
  startAdminListener,
  type AdminListener,
  type Readiness,
} from './admin-listener.js';
