/**
 * The KV layer's settings: Raft timing, leases, proposals, log truncation
 * (CockroachDB's kv.* / raft settings). Ticks come from outside (Store.tick,
 * called by the server's timer every tickIntervalMs or by tests), so every
 * duration below that is counted in ticks scales with the tick interval.
 *
 * Defaults: tick 100 ms, election 10 ticks (1 s), heartbeat 2 ticks, lease
 * 6 s. Tests use short values (kvTestSettings).
 */
export interface KvSettings {
  /** How often the owner calls Store.tick (used by test-cluster and the server's timer). */
  readonly tickIntervalMs: number;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  readonly leaseDurationMicros: number;
  /** A pending command is proposed again after this many ticks without applying. */
  readonly reproposalTicks: number;
  /** A pending command answers ambiguous after this many ticks. */
  readonly proposalTimeoutTicks: number;
  /** Raft: max bytes of entries per MsgApp. */
  readonly maxRaftMsgBytes: number;
  /** Raft: max bytes of committed entries handed out per Ready. */
  readonly maxCommittedBytesPerReady: number;
  /** The truncation queue runs on each leader every this many ticks. */
  readonly truncationIntervalTicks: number;
  /** Truncate once the log holds more entries than this (keeping what active followers need). */
  readonly raftLogMaxEntries: number;
  /** Or once its entries hold more bytes than this. */
  readonly raftLogMaxBytes: number;
  /** Beyond this many entries the log is truncated to the applied index even if a follower lags (it will get a snapshot). */
  readonly raftLogHardMaxEntries: number;
  /** Apply already-durable committed entries concurrently with the round's synced write (Store step 1b). */
  readonly applyDurableEarly: boolean;
  /** A leader sends its MsgApps before the round's synced write instead of after it (Store step 1c; Raft thesis §10.2.1). */
  readonly sendAppendsBeforeSync: boolean;
  /** Bytes of engine key/values per snapshot chunk. */
  readonly snapshotChunkBytes: number;
}

export const DEFAULT_KV_SETTINGS: KvSettings = {
  tickIntervalMs: 100,
  electionTicks: 10,
  heartbeatTicks: 2,
  leaseDurationMicros: 6_000_000,
  reproposalTicks: 10,
  proposalTimeoutTicks: 300,
  maxRaftMsgBytes: 64 * 1024,
  maxCommittedBytesPerReady: 4 * 1024 * 1024,
  truncationIntervalTicks: 10,
  raftLogMaxEntries: 1000,
  raftLogMaxBytes: 8 * 1024 * 1024,
  raftLogHardMaxEntries: 20_000,
  applyDurableEarly: true,
  sendAppendsBeforeSync: true,
  snapshotChunkBytes: 1 << 20,
};

/** Short timings for in-process tests: tick 10 ms, election 100 ms, lease 1 s. */
export function kvTestSettings(over: Partial<KvSettings> = {}): KvSettings {
  return {
    ...DEFAULT_KV_SETTINGS,
    tickIntervalMs: 10,
    leaseDurationMicros: 1_000_000,
    reproposalTicks: 20,
    proposalTimeoutTicks: 500,
    ...over,
  };
}
