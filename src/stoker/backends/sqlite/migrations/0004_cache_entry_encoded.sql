-- Compressed forms of an inline body made at store time ((coding, bytes) pairs, encoded like
-- headers); NULL when an entry has none.  Entries stored before this column have none.
ALTER TABLE cache_entries ADD COLUMN encoded BLOB;
