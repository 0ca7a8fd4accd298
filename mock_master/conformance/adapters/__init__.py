"""In-tree adapters: small programs that run a replication client library against a server and
print one JSON line per decoded event in the conformance schema (docs/conformance.md)."""
