/**
 * Nereid's access log (`--access-log`): one JSON line per inference request (HTTP infer,
 * generate and generate_stream, gRPC ModelInfer, each request on a ModelStreamInfer stream), with what an operator looks for first: when, which protocol, model and version, the
 * status, bytes in and out, time queued and computing, total time, the client, the request id and the
 * trace id. Lines go to a write stream (the file, or stdout), so the event loop never waits on the disk;
 * when the disk falls behind by more than `maxBufferedBytes`, lines are dropped (and counted) rather than
 * held in memory without bound.
 */
import { createWriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import type { Logger } from '../common/logger.js';

export interface AccessEntry {
  readonly protocol: 'http' | 'grpc';
  readonly model: string;
  readonly version: string;
  /** HTTP status, or gRPC status code. */
  readonly status: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
  /** From the request's arrival to its reply, in ns (process.hrtime.bigint() differences). */
  readonly durationNs: number;
  readonly queueNs?: number;
  readonly computeNs?: number;
  readonly client: string;
  readonly requestId: string;
  readonly traceId: string;
}

/** Default cap on lines waiting for the disk. */
export const DEFAULT_ACCESS_LOG_BUFFER = 16 * 1024 * 1024;

const us = (ns: number | undefined): number | undefined =>
  ns === undefined ? undefined : Math.round(ns / 1000);

export class AccessLog {
  private dropped = 0;
  private readonly ownsStream: boolean;

  constructor(
    private readonly out: Writable,
    private readonly log: Logger,
    private readonly maxBufferedBytes = DEFAULT_ACCESS_LOG_BUFFER,
    ownsStream = false,
  ) {
    this.ownsStream = ownsStream;
    out.on('error', (err) => log.error(`access log: ${err.message}`));
  }

  /** `stdout`, `stderr`, or a file path (appended to). */
  static open(target: string, log: Logger): AccessLog {
    if (target === 'stdout') return new AccessLog(process.stdout, log);
    if (target === 'stderr') return new AccessLog(process.stderr, log);
    return new AccessLog(createWriteStream(target, { flags: 'a' }), log, DEFAULT_ACCESS_LOG_BUFFER, true);
  }

  write(e: AccessEntry): void {
    if (this.out.writableLength > this.maxBufferedBytes) {
      if (this.dropped++ === 0) {
        this.log.warn('access log: the output is not keeping up; dropping lines until it does');
      }
      return;
    }
    if (this.dropped > 0) {
      this.log.warn(`access log: ${this.dropped} line(s) dropped while the output was behind`);
      this.dropped = 0;
    }
    const line = {
      time: new Date().toISOString(),
      protocol: e.protocol,
      model: e.model,
      version: e.version,
      status: e.status,
      bytes_in: e.bytesIn,
      bytes_out: e.bytesOut,
      duration_us: us(e.durationNs),
      queue_us: us(e.queueNs),
      compute_us: us(e.computeNs),
      client: e.client,
      request_id: e.requestId,
      trace_id: e.traceId,
    };
    this.out.write(JSON.stringify(line) + '\n');
  }

  /** Flushes and closes a file (stdout / stderr stay open). */
  close(): Promise<void> {
    if (!this.ownsStream) return Promise.resolve();
    return new Promise((resolve) => this.out.end(() => resolve()));
  }
}
