"""The ``?`` help screen: every key, what the panes show, the filter language."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# binlogscope

**Top**: one row per event (or packet). **Left**: the decoded fields of the selected row.
**Right**: its bytes. Select a field and its bytes light up; move in the hex pane and the field
that owns the byte is selected. The line under the panes says what the field means.

| Key | Does |
|---|---|
| `↑ ↓ PgUp PgDn Home End` | move in the focused pane (list, tree, hex); `G` last row |
| `Tab` / `Shift+Tab` | next / previous pane; `Esc` back to the list |
| `← →` in the tree | collapse / expand (or go to parent / first child) |
| `← → ↑ ↓` in the hex pane | move byte by byte; the tree follows |
| `f` | filter (see below); `e` toggles errors only |
| `/` | search type, table and summary; `n` / `N` next / previous |
| `g` | go to `1234` (a position in the selected row's file), `FILE:1234`, a row `#57`, |
| | a GTID (`0-1-42`, `uuid:42`); `end:FILE:1234` the event that ENDS there (an error's |
| | end_log_pos, nextPosition, LogPos); a plain position is where the event starts |
| `+` (`*`) / `-` | expand every field of the event / collapse all |
| `b` / `B` / `Ctrl+B` / `m` | bookmark the row / next / previous bookmark / the bookmark list |
| `x` | export the view (the filtered rows): `NAME.jsonl` JSON lines, `NAME.pcapng` |
| | (or `.pcap`) packets Wireshark opens, `NAME.parquet` or `DIR/` Parquet |
| `X` | the selected row: `NAME.json` its tree, `NAME.bin` its raw bytes, `NAME.pcapng` |
| `c` / `v` | copy the selected field's hex / value |
| `t` | time column: UTC time / seconds since the first row / delta to the previous shown row |
| `L` | follow the row's link: an event asking for an ACK -> its ACK (latency), an ACK -> |
| | its event, a rows event -> its TABLE_MAP (the line under the panes lists them) |
| `S` | conversations: each connection (or binlog file) as `--summary` shows it; Enter filters |
| `D` | the documentation and server source links of the row and field (also under the panes) |
| `C` | choose the list's columns (saved per kind of source: files / packet streams) |
| `F` | live, sniff, proxy: follow the newest row (moving up or scrolling stops it; `End` resumes) |
| `p` | live: pause / resume taking events (the store holds the fetcher back: nothing lost) |
| `p` | sniff, proxy: freeze the list, the capture or relay goes on; `p` shows what was held |
| `?` | this help; `q` quits (always, even while the network hangs) |

**Filter**: terms separated by spaces, all must match:
`type:WRITE,UPDATE` (event type contains), `table:shop\\.orders` (regex on schema.table),
`gtid:0-1-42` (the transaction's events), `file:000004` (binlog file name contains),
`pos:1262` (the event holding that position), `pos>N` `pos<N` `pos>=N` `pos<=N` (start offset,
"# at"), `flow:1,3` (capture flows), `seq:0`, `semi:ack` / `semi:ask` / `semi:ef`,
`time>12:30:05.250000` `time<2026-11-22T00:21:26` (UTC; a time of day or a date and time),
`errors` (rows with a decode error), `dir:client` / `dir:server` (who sent the packet),
anything else is free text in type, table and summary. The status bar shows the active filter.
The prompt opens on the current filter, selected: type to replace it, `Backspace` then `Enter`
(an empty filter) shows every row, `Esc` keeps it; `↑ ↓` in the prompt walk its history.

**Export** never overwrites: an existing name becomes `NAME-1.EXT` (the message says so).
**Copy** uses OSC 52, which many terminals and tmux drop silently: the value is also shown and
saved to a file (the message names it).

Colours: control (FORMAT_DESCRIPTION, ROTATE, ...), GTID, query, TABLE_MAP, write / update /
delete rows, commit (XID), heartbeat, and errors in red. Times are UTC.

**Live sessions and captures**: `dir` is `->` (replica to source) or `<-`; `seq` the packet's
sequence id; `semi` is `ef` when the source put the semi-sync header before the event,
`ef ACK?` when it asks for an ACK, and `ACK <pos>` on the ACK the replica sent back. Colours add
handshake/auth, query/result, dump commands, ACKs, setup steps and notes. The strip above the
list shows the phases (connect > auth > setup > register > dump > stream): the session's phase
is highlighted, the selected row's is underlined, and the line below says why a replica sends
the selected setup step. The status bar shows the state (LIVE / PAUSED), follow, the packets
a paused capture holds, the binlog position being fetched, events/s, ACKs sent, heartbeats,
the store (events fetched, shown, acknowledged, and waiting between the fetcher and the view),
errors and reconnects.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Markdown(HELP)

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(result)
