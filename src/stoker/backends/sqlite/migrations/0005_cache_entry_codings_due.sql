-- 1 when an entry's compressed forms may be made but are not yet (they are made when a
-- client first accepts a coding); entries stored before this column have theirs made or none.
ALTER TABLE cache_entries ADD COLUMN codings_due INTEGER NOT NULL DEFAULT 0;
