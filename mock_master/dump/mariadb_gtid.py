"""MariaDB GTID dumps as the server runs them (MariaDB ``sql/sql_repl.cc``, ``rpl_gtid.cc``).

- :class:`BinlogState`: the last GTID per (domain, server) in insertion order, as
  ``rpl_binlog_state`` keeps it (the master's binlog state, and the state a GTID dump tracks for
  its fake GTID_LIST events);
- :func:`parse_gtid_list`: ``@slave_connect_state`` / ``@slave_until_gtid`` as the server reads
  them;
- :class:`GtidDump`: one dump's connect state and UNTIL state: the start checks and their
  errors, the file to start from, then per event whether it is skipped, and when the fake
  GTID_LIST (start position reached, or UNTIL reached) is due.

Facts carried over from the server (no code): a GTID start reads files newest first and takes
the first whose GTID_LIST the requested state covers; domains the binlog never had are
remembered and checked when one of their GTIDs turns up; a group is skipped up to and including
the requested GTID, and after the group holding it a GTID_LIST (flags 0) with the GTIDs seen so
far is sent at the position after that group; with UNTIL, a GTID_LIST with FLAG_UNTIL_REACHED
follows the group that reached the condition and the dump ends with EOF.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from binlogscope.wire.binlog.gtid_events import (
    FL_STANDALONE,
    GTID_LIST_FLAG_UNTIL_REACHED,
    MariadbGtid,
)
from binlogscope.wire.binlog.types import EventType
from mock_master.dump.errors import StartError

GTID = int(EventType.GTID_EVENT)
GTID_LIST = int(EventType.GTID_LIST_EVENT)
XID = int(EventType.XID_EVENT)
QUERY = int(EventType.QUERY_EVENT)
XA_PREPARE = int(EventType.XA_PREPARE_LOG_EVENT)
#: Log_event::is_part_of_group: events that belong to the group that follows them
PART_OF_GROUP = frozenset(int(t) for t in (
    EventType.GTID_EVENT, EventType.INTVAR_EVENT, EventType.RAND_EVENT,
    EventType.USER_VAR_EVENT, EventType.TABLE_MAP_EVENT, EventType.ANNOTATE_ROWS_EVENT))

START_ON_EMPTY_DOMAIN = 1

_SKIP_NOT, _SKIP_STANDALONE, _SKIP_TRANSACTION = 0, 1, 2
_UNTIL_NOT_DONE, _UNTIL_AFTER_STANDALONE, _UNTIL_AFTER_TRANSACTION = 0, 1, 2

#: a state that does not parse: the parser's own error comes first (ER_INCORRECT_GTID_STATE)
ER_INCORRECT_GTID_STATE = 1941
_MALFORMED = "Could not parse GTID list"
_NO_FILE = ("Could not find GTID state requested by slave in any binlog files. Probably the "
            "slave state is too old and required binlog files have been purged.")


class GtidStartError(StartError):
    """The error the server ends the dump with (a MariaDB GTID start): code and message."""


_M64 = (1 << 64) - 1
_NO_RECORD = 0xFFFFFFFF
_LOWFIND, _LOWUSED, _HIGHFIND, _HIGHUSED = 1, 2, 4, 8


def _hash_bin(key: bytes) -> int:
    """The hash of a binary key (my_charset_bin's hash_sort, seeded as my_hash_sort)."""
    nr1, nr2 = 1, 4
    for b in key:
        nr1 = (nr1 ^ ((((nr1 & 63) + nr2) * b + (nr1 << 8)) & _M64)) & _M64
        nr2 = (nr2 + 3) & _M64
    return nr1 & 0xFFFFFFFF


def _mask(nr: int, buffmax: int, maxlength: int) -> int:
    if nr & (buffmax - 1) < maxlength:
        return nr & (buffmax - 1)
    return nr & ((buffmax >> 1) - 1)


class _Hash:
    """The record order of the server's HASH (mysys linear hashing) after insertions of
    4-byte keys: the order in which it lists a binlog state's domains and servers."""

    def __init__(self) -> None:
        self.blength = 1
        self.keys: list[int] = []
        self.nrs: list[int] = []
        self.nexts: list[int] = []

    def insert(self, key: int) -> None:
        nr = _hash_bin(key.to_bytes(4, "little"))
        keys, nrs, nexts = self.keys, self.nrs, self.nexts
        records = len(keys)
        keys.append(0)
        nrs.append(0)
        nexts.append(_NO_RECORD)
        empty = records
        half = self.blength >> 1
        idx = first = records - half
        flag = 0
        gpos = gpos2 = 0
        rec = rec2 = (0, 0)
        if idx != records:
            while True:
                pos = idx
                h = nrs[pos]
                if flag == 0 and _mask(h, self.blength, records) != first:
                    break
                if not h & half:  # the key stays
                    if not flag & _LOWFIND:
                        if flag & _HIGHFIND:
                            flag = _LOWFIND | _HIGHFIND
                            gpos, rec, empty = empty, (keys[pos], h), pos
                        else:
                            flag = _LOWFIND | _LOWUSED
                            gpos, rec = pos, (keys[pos], h)
                    else:
                        if not flag & _LOWUSED:
                            keys[gpos], nrs[gpos] = rec
                            nexts[gpos] = pos
                            flag = (flag & _HIGHFIND) | _LOWFIND | _LOWUSED
                        gpos, rec = pos, (keys[pos], h)
                else:  # the key moves
                    if not flag & _HIGHFIND:
                        flag = (flag & _LOWFIND) | _HIGHFIND
                        gpos2, empty, rec2 = empty, pos, (keys[pos], h)
                    else:
                        if not flag & _HIGHUSED:
                            keys[gpos2], nrs[gpos2] = rec2
                            nexts[gpos2] = pos
                            flag = (flag & _LOWFIND) | _HIGHFIND | _HIGHUSED
                        gpos2, rec2 = pos, (keys[pos], h)
                idx = nexts[pos]
                if idx == _NO_RECORD:
                    break
            if flag & (_LOWFIND | _LOWUSED) == _LOWFIND:
                keys[gpos], nrs[gpos] = rec
                nexts[gpos] = _NO_RECORD
            if flag & (_HIGHFIND | _HIGHUSED) == _HIGHFIND:
                keys[gpos2], nrs[gpos2] = rec2
                nexts[gpos2] = _NO_RECORD
        pos = _mask(nr, self.blength, records + 1)
        if pos == empty:
            nexts[pos] = _NO_RECORD
        else:
            keys[empty], nrs[empty], nexts[empty] = keys[pos], nrs[pos], nexts[pos]
            g = _mask(nrs[pos], self.blength, records + 1)
            if pos == g:
                nexts[pos] = empty
            else:
                nexts[pos] = _NO_RECORD
                link = g
                while nexts[link] != pos:
                    link = nexts[link]
                nexts[link] = empty
        keys[pos], nrs[pos] = key, nr
        if len(keys) == self.blength:
            self.blength += self.blength


class BinlogState:
    """Last sequence number per (domain, server_id); per domain the server of its most recent
    GTID; listed in the order of the server's hash tables."""

    def __init__(self, gtids: list[MariadbGtid] | None = None) -> None:
        self.domains: dict[int, dict[int, int]] = {}
        self.last: dict[int, int] = {}
        self._order = _Hash()
        self._server_order: dict[int, _Hash] = {}
        for g in gtids or ():
            self.update(g.domain_id, g.server_id, g.seq_no)

    def update(self, domain: int, server_id: int, seq: int) -> None:
        servers = self.domains.get(domain)
        if servers is None:
            servers = self.domains[domain] = {}
            self._order.insert(domain)
            self._server_order[domain] = _Hash()
        if server_id not in servers:
            self._server_order[domain].insert(server_id)
        servers[server_id] = seq
        self.last[domain] = server_id

    def load(self, gtids: list[MariadbGtid]) -> None:
        self.domains.clear()
        self.last.clear()
        self._order = _Hash()
        self._server_order.clear()
        for g in gtids:
            self.update(g.domain_id, g.server_id, g.seq_no)

    def find(self, domain: int, server_id: int) -> int | None:
        return self.domains.get(domain, {}).get(server_id)

    def domain_last(self, domain: int) -> tuple[int, int] | None:
        """(server_id, seq) of the domain's most recent GTID."""
        s = self.last.get(domain)
        return None if s is None else (s, self.domains[domain][s])

    def gtid_list(self) -> list[MariadbGtid]:
        """As the server lists them in a GTID_LIST: domains in hash order, in each its other
        servers in hash order, then its last one."""
        out: list[MariadbGtid] = []
        for d in self._order.keys:
            servers = self.domains[d]
            last = self.last[d]
            out.extend(MariadbGtid(d, s, servers[s]) for s in self._server_order[d].keys
                       if s != last)
            out.append(MariadbGtid(d, last, servers[last]))
        return out


_GTID_RE = re.compile(r"([0-9]+)-([0-9]+)-([0-9]+)")


def parse_gtid_list(text: str) -> dict[int, MariadbGtid] | None:
    """``d-s-n,d-s-n`` (one per domain) by domain, in order; None when malformed."""
    out: dict[int, MariadbGtid] = {}
    if not text:
        return out
    for part in text.split(","):
        m = _GTID_RE.fullmatch(part)
        if m is None:
            return None
        d, s, n = (int(x) for x in m.groups())
        if d >= 1 << 32 or s >= 1 << 32 or n >= 1 << 64 or d in out:
            return None
        out[d] = MariadbGtid(d, s, n)
    return out


def _missing_error(g: MariadbGtid, binlog: BinlogState) -> GtidStartError:
    last = binlog.domain_last(g.domain_id)
    text = (f"Error: connecting slave requested to start from GTID {g.domain_id}-"
            f"{g.server_id}-{g.seq_no}, which is not in the master's binlog")
    if last is not None and last[1] >= g.seq_no:
        text += (". Since the master's binlog contains GTIDs with higher sequence numbers, it "
                 "probably means that the slave has diverged due to executing extra erroneous "
                 "transactions")
    return GtidStartError(text)


@dataclass(slots=True)
class _Entry:
    gtid: MariadbGtid
    flags: int = 0


class GtidDump:
    """One MariaDB GTID dump: the requested state, the UNTIL state and the skip/UNTIL machine."""

    def __init__(self, connect_state: str, until: str | None, *, strict: bool = False,
                 ignore_duplicates: bool = False) -> None:
        state = parse_gtid_list(connect_state)
        if state is None:
            raise GtidStartError(_MALFORMED, ER_INCORRECT_GTID_STATE)
        self.state: dict[int, _Entry] = {d: _Entry(g) for d, g in state.items()}
        self.until: dict[int, MariadbGtid] | None = None
        if until is not None:
            u = parse_gtid_list(until)
            if u is None:
                raise GtidStartError(_MALFORMED, ER_INCORRECT_GTID_STATE)
            self.until = u
        self.strict = strict
        self.ignore_duplicates = ignore_duplicates
        #: the GTIDs this dump has seen (GTID_LIST contents too when UNTIL is used)
        self.seen = BinlogState()
        self.skip = _SKIP_NOT
        self.until_group = _UNTIL_NOT_DONE
        self.fake_due = False

    # ------------------------------------------------------------ before the first event
    def check_start(self, binlog: BinlogState) -> None:
        """check_slave_start_position: every requested GTID must be in the binlog, except in
        domains the binlog never had (checked later) and domains UNTIL already ends."""
        for e in self.state.values():
            g = e.gtid
            have = binlog.find(g.domain_id, g.server_id)
            if have is not None and have >= g.seq_no:
                continue
            last = binlog.domain_last(g.domain_id)
            if last is None:
                e.flags |= START_ON_EMPTY_DOMAIN
                continue
            if self.ignore_duplicates and last[1] < g.seq_no:
                continue
            if self.until is not None:
                u = self.until.get(g.domain_id)
                if u is None:
                    continue
                have_u = binlog.find(u.domain_id, u.server_id)
                if have_u is not None and have_u >= u.seq_no:
                    del self.until[g.domain_id]
                    continue
            raise _missing_error(g, binlog)

    def _covers(self, glist: list[MariadbGtid]) -> bool:
        """contains_all_slave_gtid: may the dump start at the file with this GTID_LIST?"""
        for i, g in enumerate(glist):
            e = self.state.get(g.domain_id)
            if e is None:
                return False
            s = e.gtid
            if s.server_id == g.server_id and s.seq_no <= g.seq_no:
                if s.seq_no < g.seq_no:
                    return False
                if i + 1 < len(glist) and glist[i + 1].domain_id == g.domain_id:
                    return False
        return True

    def find_file(self, gtid_lists: list[list[MariadbGtid] | None]) -> int:
        """gtid_find_binlog_file: the newest file whose GTID_LIST (None: the file has none)
        the requested state covers; requested GTIDs equal to its entries are dropped (nothing
        to skip), UNTIL conditions it already passed too."""
        for fi in range(len(gtid_lists) - 1, -1, -1):
            glist = gtid_lists[fi]
            if glist is not None and not self._covers(glist):
                continue
            for g in glist or ():
                e = self.state.get(g.domain_id)
                if e is not None and e.gtid.server_id == g.server_id \
                        and e.gtid.seq_no == g.seq_no:
                    del self.state[g.domain_id]
                if self.until is not None:
                    u = self.until.get(g.domain_id)
                    if u is not None and u.server_id == g.server_id and u.seq_no <= g.seq_no:
                        del self.until[g.domain_id]
            return fi
        raise GtidStartError(_NO_FILE)

    def pos_reached(self) -> bool:
        """is_pos_reached: nothing left to skip except domains this binlog never had."""
        return all(e.flags & START_ON_EMPTY_DOMAIN for e in self.state.values())

    def file_started(self) -> None:
        """After each file's FORMAT_DESCRIPTION: an UNTIL already met at the start stops after
        the first event that is not part of a group."""
        if self.until is not None and not self.until:
            self.until_group = _UNTIL_AFTER_STANDALONE

    @property
    def active(self) -> bool:
        """Does this dump still need to look at every event?"""
        return bool(self.state) or self.until is not None or self.skip != _SKIP_NOT \
            or self.fake_due

    # ------------------------------------------------------------ per event
    def on_event(self, t: int, gtid_list: list[MariadbGtid] | None,
                 gtid: tuple[int, int, int, int] | None, is_commit: bool,
                 binlog: BinlogState) -> bool:
        """Before an event is sent: False when it is skipped. ``gtid_list`` is a GTID_LIST's
        content, ``gtid`` a GTID event's (domain, server, seq, flags2), ``is_commit`` whether a
        QUERY is COMMIT/ROLLBACK. Raises GtidStartError where the server ends the dump."""
        if t == GTID_LIST and self.until is not None and gtid_list is not None:
            self.seen.load(gtid_list)
        if t == GTID and gtid is not None and (self.state or self.until is not None):
            d, s, n, flags2 = gtid
            group = _SKIP_STANDALONE if flags2 & FL_STANDALONE else _SKIP_TRANSACTION
            self.seen.update(d, s, n)
            have_now = binlog.find(d, s)
            if have_now is None or have_now < n:  # an event appended since the dump started
                binlog.update(d, s, n)
            e = self.state.get(d)
            if e is not None:
                g = e.gtid
                if e.flags & START_ON_EMPTY_DOMAIN:
                    have = binlog.find(d, g.server_id)
                    if have is None or have < g.seq_no:
                        raise _missing_error(g, binlog)
                    e.flags &= ~START_ON_EMPTY_DOMAIN
                if s != g.server_id or n <= g.seq_no:
                    self.skip = group
                if s == g.server_id and n >= g.seq_no:
                    if self.strict and n > g.seq_no:
                        raise GtidStartError(
                            f"The binlog on the master is missing the GTID {d}-{g.server_id}-"
                            f"{g.seq_no} requested by the slave (even though both a prior and "
                            "a subsequent sequence number does exist), and GTID strict mode is "
                            "enabled")
                    self.fake_due = True
                    del self.state[d]
            if self.until is not None:
                u = self.until.get(d)
                if u is None:
                    self.skip = group
                elif s == u.server_id and n >= u.seq_no:
                    del self.until[d]
                    if not self.until:
                        self.until_group = (_UNTIL_AFTER_STANDALONE if group == _SKIP_STANDALONE
                                            else _UNTIL_AFTER_TRANSACTION)
                    if n > u.seq_no:
                        self.skip = group
        if self.skip == _SKIP_STANDALONE:
            if t not in PART_OF_GROUP:
                self.skip = _SKIP_NOT
            return False
        if self.skip == _SKIP_TRANSACTION:
            if t in (XID, XA_PREPARE) or is_commit:
                self.skip = _SKIP_NOT
            return False
        return True

    def fake_after(self, t: int, is_commit: bool) -> list[tuple[list[MariadbGtid], int]]:
        """After an event (sent or skipped): the fake GTID_LIST events now due, as (GTIDs,
        flags); one with FLAG_UNTIL_REACHED means the dump ends after it."""
        out: list[tuple[list[MariadbGtid], int]] = []
        if self.fake_due and self.skip == _SKIP_NOT:
            out.append((self.seen.gtid_list(), 0))
            self.fake_due = False
        if self.until is not None and self._until_reached(t, is_commit):
            out.append((self.seen.gtid_list(), GTID_LIST_FLAG_UNTIL_REACHED))
        return out

    def _until_reached(self, t: int, is_commit: bool) -> bool:
        if self.until_group == _UNTIL_NOT_DONE:
            return False
        if self.until_group == _UNTIL_AFTER_STANDALONE:
            return t not in PART_OF_GROUP
        return t == XID or (t == QUERY and is_commit)
