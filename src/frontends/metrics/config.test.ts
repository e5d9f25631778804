import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Logger } from '../../common/logger.js';
import { DEFAULT_QUANTILES, metricsSettings, parseQuantiles } from './config.js';

describe('metricsSettings', () => {
  it('defaults: latency counters on, summaries and histograms off, default quantiles', () => {
    assert.deepEqual(metricsSettings(new Map()), {
      counterLatencies: true,
      summaryLatencies: false,
      histogramLatencies: false,
      quantiles: DEFAULT_QUANTILES,
    });
  });

  it('switches only on the exact strings, as Triton does', () => {
    const s = metricsSettings(
      new Map([
        ['counter_latencies', 'false'],
        ['summary_latencies', 'true'],
        ['histogram_latencies', 'True'],
      ]),
    );
    assert.equal(s.counterLatencies, false);
    assert.equal(s.summaryLatencies, true);
    assert.equal(s.histogramLatencies, false);
  });

  it('custom quantiles replace the defaults; bad pairs are logged and skipped; unknown keys warned', () => {
    const lines: string[] = [];
    const log = new Logger({}, (l) => lines.push(l));
    const s = metricsSettings(
      new Map([
        ['summary_quantiles', '0.5:0.05,oops,0.99:0.001,2:0.1,x:y'],
        ['colour', 'blue'],
      ]),
      log,
    );
    assert.deepEqual(s.quantiles, [
      { quantile: 0.5, error: 0.05 },
      { quantile: 0.99, error: 0.001 },
    ]);
    assert.equal(lines.filter((l) => l.includes('Invalid option')).length, 3);
    assert.ok(lines.some((l) => l.includes("unknown --metrics-config setting 'colour'")));
  });

  it('keeps the defaults when no quantile pair is valid', () => {
    assert.equal(metricsSettings(new Map([['summary_quantiles', 'nope']])).quantiles, DEFAULT_QUANTILES);
    assert.deepEqual(
      parseQuantiles('', () => undefined),
      [],
    );
  });
});
