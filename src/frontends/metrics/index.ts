/** The Prometheus metrics frontend's public surface. */
export { createMetricsFrontend } from './server.js';
export type { MetricsFrontend, MetricsFrontendOptions } from './server.js';
export { metricsSettings, DEFAULT_QUANTILES, type MetricsSettings } from './config.js';
export { FAMILIES } from './families.js';
