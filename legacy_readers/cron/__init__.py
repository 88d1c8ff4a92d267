"""Cron: ``cron/jobs.json``, ``cron/jobs-state.json``, ``cron/runs/<jobId>.jsonl``.

Four readers, one family, one module each (``docs/readers/cron.md`` has the full contract):

* ``cron-jobs`` (``jobs``): the job definitions -> ``global.cron_jobs``,
  after the legacy shape repairs OpenClaw's own doctor applies (``jobId``,
  numeric ids, string / ``schedule.cron`` schedules, enum case, top-level
  payload and delivery fields, ``notify: true``). Duplicate ids: the newest
  copy wins, the others are reported.
* ``cron-state`` (``jobs_state``; after ``cron-jobs``): the runtime-state sidecar -> the state columns of
  existing ``cron_jobs`` rows. It never invents a job.
* ``cron-runs`` (``runs``; after ``cron-jobs``): one run log per job -> ``global.cron_run_logs``,
  streamed line by line; a re-import replaces that job's rows.
* ``cron-jobs-backup`` (``store_backup``): OpenClaw's own ``jobs.json.bak`` copies,
  retained in place.

Rows are keyed by ``store_key`` = the absolute path of the store's
``jobs.json`` (``<state dir>/cron/jobs.json``): what every release with a
SQLite cron store uses (``cronStoreKey(storePath) = path.resolve(storePath)``
in 2026.7.35 and 2026.9.6), so OpenClaw finds the imported jobs where it
looks for them. Columns and value formats are those of 2026.7.35's
``bindCronJobRow`` / ``bindCronRunLogRow`` (see docs/readers/cron.md).

``_store`` holds the store keys, table constants and row helpers the readers
share; ``_repairs`` the legacy shape repairs of a job and its row.
"""

from __future__ import annotations

from statekit.legacy_readers.cron._repairs import schedule_identity
from statekit.legacy_readers.cron._store import source_store_key, store_key_for, store_rel
from statekit.legacy_readers.cron.jobs import CronJobsReader, parse_store
from statekit.legacy_readers.cron.jobs_state import CronStateReader, parse_state
from statekit.legacy_readers.cron.runs import CronRunsReader, run_log_job_id
from statekit.legacy_readers.cron.store_backup import CronJobsBackupReader

__all__ = [
    "CronJobsBackupReader",
    "CronJobsReader",
    "CronRunsReader",
    "CronStateReader",
    "parse_state",
    "parse_store",
    "run_log_job_id",
    "schedule_identity",
    "source_store_key",
    "store_key_for",
    "store_rel",
]
