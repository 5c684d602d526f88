-- Rate-limit counters, shared by every platform process over one database. One row per
-- bucket (rule name and SHA-256 of the key, never the raw email or address) per fixed
-- window; rows are purged a day after their window starts.

create table platform.rate_limits (
  bucket text not null,
  window_start timestamptz not null,
  hits integer not null,
  primary key (bucket, window_start)
);

-- purgeExpired deletes by window start across all buckets.
create index rate_limits_window_start_idx on platform.rate_limits (window_start);
