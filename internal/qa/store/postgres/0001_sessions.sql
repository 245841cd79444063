-- Version 1: the session table of QA-CONTRACT §8, the columns of
-- internal/qa/store/sqlite's schema version 1 in PostgreSQL types. Rows are
-- content-free: the payload is the serialized orchestration state (ids,
-- hashes, statuses, receipts), never raw diffs, prompts or model output.
CREATE TABLE qa_sessions (
    run_id             TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    revision           BIGINT  NOT NULL CHECK (revision >= 0),
    status             TEXT    NOT NULL,
    finalized          BOOLEAN NOT NULL,
    expires_at_unix_ns BIGINT,
    payload            BYTEA   NOT NULL
);

-- Expiry sweeps and eviction read rows oldest first; NULL is the zero
-- time, the oldest of all.
CREATE INDEX qa_sessions_expiry ON qa_sessions (expires_at_unix_ns NULLS FIRST, run_id);

-- The capacity lock: one row that every capacity-checked create (and
-- start-up recovery) locks with SELECT ... FOR UPDATE before it counts the
-- sessions, so that creates from every replica are serialised; see the
-- package documentation.
CREATE TABLE qa_capacity_lock (
    id INTEGER PRIMARY KEY CHECK (id = 1)
);
INSERT INTO qa_capacity_lock (id) VALUES (1);
