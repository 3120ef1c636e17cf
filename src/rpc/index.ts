/**
 * The RPC layer's public surface (DESIGN.md §2: src/rpc may import only
 * src/util). The KV layer builds its messages with BufWriter/BufReader and
 * sends them through an RpcContext.
 */
export { BufReader, BufWriter, RpcCodecError } from './codec.js';
export { beginFrame, DEFAULT_MAX_FRAME_BYTES, encodeFrame, endFrame, FRAME_HEADER_BYTES, FrameDecoder } from './frame.js';
export { decodeEnvelope, encodeEnvelope, type Envelope, MessageKind } from './envelope.js';
export { RpcError } from './errors.js';
export { type FaultCounters, FaultHook, type FaultSpec, InvalidFaultSpecError } from './fault-hook.js';
export { type MetricsSnapshot, PeerMetrics, RpcMetrics } from './metrics.js';
export { Connection } from './connection.js';
export { type CallOptions, ConnectionClass, CONNECTION_CLASSES, type RpcCallContext, type RpcHandler, type RpcTransport } from './transport.js';
export { type BackoffOptions, backoffDelay, DEFAULT_BACKOFF, type PeerAddress, type PeerStatus, RpcContext, type RpcContextOptions, RpcServer } from './rpc-context.js';
export { isOffsetHealthy, measureOffset, type OffsetMeasurement, PING_METHOD } from './clock-offset.js';
