-- Whether the origin's own headers made an entry shareable (explicit lifetime or public),
-- as opposed to a rule or a default: requests with personal cookies reuse only those.
-- Entries stored before this column existed count as not vouched (the safe side).
ALTER TABLE cache_entries ADD COLUMN origin_vouched INTEGER NOT NULL DEFAULT 0;
-- Whether the response may be served stale at all (no must-revalidate, proxy-revalidate or
-- no-cache): a soft purge then keeps serving it while it is refreshed in the background.
ALTER TABLE cache_entries ADD COLUMN stale_ok INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cache_entries DROP COLUMN extra;
