-- A short lease while one request refreshes an app session, so concurrent requests in the
-- final minute do not present the same refresh token twice (which would read as a replay).
alter table platform.app_sessions add column refreshing_until timestamptz;
