-- What each member of the bus last said of itself (its figures, as JSON), for the first
-- process's /metrics to count every process's requests.
ALTER TABLE purge_members ADD COLUMN figures TEXT;
