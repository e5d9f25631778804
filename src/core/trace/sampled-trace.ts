/**
 * One sampled exchange (Triton's TraceManager::Trace): the root InferenceTrace the core gets, the children
 * it spawns (ensemble steps, BLS calls), and the frontend's hold on it. Each part holds a reference; when
 * the frontend has ended and the core has released every part, the recorder finishes it (writes the
 * Triton JSON, or ends the OpenTelemetry spans). What is recorded, and how, is the recorder's job.
 */
import type { Tensor } from '../../common/tensor.js';
import type { InferenceTrace, RequestTrace, TensorActivity, TraceActivity } from './types.js';

/** A node's facts a recorder reads. */
export interface TraceNodeInfo {
  readonly id: number;
  readonly parentId: number;
  readonly modelName: string;
  readonly modelVersion: number;
  readonly requestId: string;
}

/** Mode-specific recording of one sampled exchange. */
export interface TraceRecorder {
  readonly traceId: string;
  readonly wantsTensors: boolean;
  capture(root: TraceNodeInfo, name: string, ns: bigint): void;
  activity(node: TraceNodeInfo, activity: TraceActivity, ns: bigint): void;
  tensor(node: TraceNodeInfo, activity: TensorActivity, tensor: Tensor): void;
  context(node: TraceNodeInfo): string | undefined;
  /** Every part is done. */
  /** `status`: what the frontend answered (RequestTrace.end), when it said. */
  finish(status: number | undefined): void;
}

class TraceNode implements InferenceTrace, TraceNodeInfo {
  modelName = '';
  modelVersion = -1;
  requestId = '';
  private released = false;
  /** The core reported REQUEST_START: it owns this node now and will release it. */
  claimed = false;
  private liveChildren = 0;
  /** end() was called while children were still running. */
  private ending = false;

  constructor(
    private readonly owner: SampledTrace,
    private readonly parent: TraceNode | undefined,
    readonly id: number,
    readonly parentId: number,
  ) {}

  get wantsTensors(): boolean {
    return this.owner.recorder.wantsTensors;
  }

  setModel(name: string, version: number, requestId: string): void {
    this.modelName = name;
    this.modelVersion = version;
    this.requestId = requestId;
  }

  report(activity: TraceActivity, ns: bigint): void {
    if (this.released) return;
    if (activity === 'REQUEST_START') this.claimed = true;
    this.owner.recorder.activity(this, activity, ns);
  }

  tensor(activity: TensorActivity, tensor: Tensor): void {
    if (!this.released) this.owner.recorder.tensor(this, activity, tensor);
  }

  spawn(): InferenceTrace {
    this.liveChildren++;
    return this.owner.node(this, this.id);
  }

  end(at: bigint): void {
    if (this.released || this.ending) return;
    if (this.liveChildren === 0) {
      this.report('REQUEST_END', at);
      this.release();
      return;
    }
    // As in Triton, a request ends after the requests it caused (an ensemble's steps, its BLS calls).
    this.ending = true;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.parent?.childReleased();
    this.owner.unref();
  }

  private childReleased(): void {
    if (--this.liveChildren === 0 && this.ending) {
      this.ending = false;
      this.end(process.hrtime.bigint());
    }
  }

  context(): string | undefined {
    return this.owner.recorder.context(this);
  }
}

export class SampledTrace implements RequestTrace {
  private refs = 1; // the frontend's
  private ended = false;
  private status: number | undefined;
  readonly inference: TraceNode;

  constructor(
    readonly recorder: TraceRecorder,
    private readonly nextId: () => number,
  ) {
    this.inference = this.node(undefined, 0);
  }

  get traceId(): string {
    return this.recorder.traceId;
  }

  /** A new part with its own id; `parentId` 0 for the root. */
  node(parent: TraceNode | undefined, parentId: number): TraceNode {
    this.refs++;
    return new TraceNode(this, parent, this.nextId(), parentId);
  }

  capture(name: string, ns: bigint = process.hrtime.bigint()): void {
    if (!this.ended) this.recorder.capture(this.inference, name, ns);
  }

  end(status?: number): void {
    if (this.ended) return;
    this.ended = true;
    this.status = status;
    // A request that never reached the core (refused while decoding) leaves the root to the frontend.
    if (!this.inference.claimed) this.inference.release();
    this.unref();
  }

  unref(): void {
    if (--this.refs === 0) this.recorder.finish(this.status);
  }
}
