-- SQLite's 0031_traces: trace context (issue 46). A message keeps the W3C
-- traceparent of the span that sent it, a run its own span's; NULL for
-- none (tracing off).
ALTER TABLE messages ADD COLUMN traceparent TEXT;
ALTER TABLE runs ADD COLUMN traceparent TEXT;
