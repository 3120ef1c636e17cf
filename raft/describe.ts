/**
 * Human-readable renderings of Raft data for logs and the datadriven
 * transcripts (etcd/raft's describe.go formats, so transcripts read like
 * etcd's):
 *
 *   1->2 MsgApp Term:2 Log:2/5 Commit:5 Entries:[2/6 EntryNormal "data"]
 *   HardState Term:2 Vote:1 Commit:5
 *   Lead:1 State:StateLeader
 *
 * Formatting is for people; nothing parses it back.
 */
import { decodeConfChange, confChangesToString } from './conf-change-codec.js';
import {
  EntryType,
  MESSAGE_TYPE_NAMES,
  STATE_TYPE_NAMES,
  isEmptySnap,
  type ConfState,
  type Entry,
  type HardState,
  type Message,
  type Ready,
  type Snapshot,
  type SoftState,
} from './types.js';

/** Renders entry data; the default quotes it as text. */
export type EntryFormatter = (data: Uint8Array) => string;

export function defaultEntryFormatter(data: Uint8Array): string {
  return JSON.stringify(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('latin1'));
}

const ENTRY_TYPE_NAMES = ['EntryNormal', 'EntryConfChangeV2'];

function sortedList(ids: readonly number[]): string {
  return `[${[...ids].sort((a, b) => a - b).join(' ')}]`;
}

export function describeConfState(cs: ConfState): string {
  return `Voters:${sortedList(cs.voters)} VotersOutgoing:${sortedList(cs.votersOutgoing)} Learners:${sortedList(cs.learners)} LearnersNext:${sortedList(cs.learnersNext)} AutoLeave:${cs.autoLeave}`;
}

export function describeHardState(hs: HardState): string {
  let s = `Term:${hs.term}`;
  if (hs.vote !== 0) s += ` Vote:${hs.vote}`;
  s += ` Commit:${hs.commit}`;
  return s;
}

export function describeSoftState(ss: SoftState): string {
  return `Lead:${ss.lead} State:${STATE_TYPE_NAMES[ss.raftState]}`;
}

export function describeSnapshot(s: Snapshot): string {
  const m = s.metadata;
  return `Index:${m.index} Term:${m.term} ConfState:${describeConfState(m.confState)}`;
}

export function describeEntry(e: Entry, f: EntryFormatter = defaultEntryFormatter): string {
  let formatted: string;
  if (e.type === EntryType.ConfChange) {
    try {
      const cc = decodeConfChange(e.data);
      formatted = confChangesToString(cc.changes);
      if (cc.transition !== 0) formatted += ` transition=${cc.transition}`;
    } catch (err) {
      formatted = `<bad conf change: ${(err as Error).message}>`;
    }
  } else {
    formatted = f(e.data);
  }
  return formatted === '' ? `${e.term}/${e.index} ${ENTRY_TYPE_NAMES[e.type]}` : `${e.term}/${e.index} ${ENTRY_TYPE_NAMES[e.type]} ${formatted}`;
}

export function describeEntries(ents: readonly Entry[], f: EntryFormatter = defaultEntryFormatter): string {
  return ents.map((e) => `${describeEntry(e, f)}\n`).join('');
}

export function describeMessage(m: Message, f: EntryFormatter = defaultEntryFormatter, indent = ''): string {
  let s = `${indent}${m.from}->${m.to} ${MESSAGE_TYPE_NAMES[m.type]} Term:${m.term} Log:${m.logTerm}/${m.index}`;
  if (m.reject) s += ` Rejected (Hint: ${m.rejectHint})`;
  if (m.commit !== 0) s += ` Commit:${m.commit}`;
  if (m.entries.length === 1) {
    s += ` Entries:[${describeEntry(m.entries[0] as Entry, f)}]`;
  } else if (m.entries.length > 1) {
    s += ' Entries:[';
    for (const e of m.entries) s += `\n${indent}  ${describeEntry(e, f)}`;
    s += `\n${indent}]`;
  }
  if (m.snapshot !== null && !isEmptySnap(m.snapshot)) s += `\n${indent}  Snapshot: ${describeSnapshot(m.snapshot)}`;
  return s;
}

/** A multi-line rendering of a Ready, omitting empty parts. */
export function describeReady(rd: Ready, f: EntryFormatter = defaultEntryFormatter): string {
  const lines: string[] = [];
  if (rd.softState !== null) lines.push(describeSoftState(rd.softState));
  if (rd.hardState !== null) lines.push(`HardState ${describeHardState(rd.hardState)}`);
  if (rd.readStates.length > 0) {
    lines.push('ReadStates:');
    for (const rs of rd.readStates) lines.push(`  Index:${rs.index} Ctx:${f(rs.requestCtx)}`);
  }
  if (rd.entries.length > 0) {
    lines.push('Entries:');
    for (const e of rd.entries) lines.push(describeEntry(e, f));
  }
  if (rd.snapshot !== null && !isEmptySnap(rd.snapshot)) lines.push(`Snapshot ${describeSnapshot(rd.snapshot)}`);
  if (rd.committedEntries.length > 0) {
    lines.push('CommittedEntries:');
    for (const e of rd.committedEntries) lines.push(describeEntry(e, f));
  }
  if (rd.messages.length > 0) {
    lines.push('Messages:');
    for (const m of rd.messages) lines.push(describeMessage(m, f));
  }
  if (lines.length === 0) return '<empty Ready>';
  return `Ready MustSync=${rd.mustSync}:\n${lines.join('\n')}`;
}
