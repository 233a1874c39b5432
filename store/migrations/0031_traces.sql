-- 0031_traces: trace context (issue 46). A message keeps the W3C
-- traceparent of the span that sent it (a run's tool call, a kickoff), so
-- the run that answers it joins the sender's trace; a run keeps its own
-- span's, so the console links to its trace. NULL for none (tracing off).
ALTER TABLE messages ADD COLUMN traceparent TEXT;
ALTER TABLE runs ADD COLUMN traceparent TEXT;
