"""The job queue's admin API over a running warmer: counts, running and dead jobs paged,
requeues by id, key, run and all (the count confirmed), each audited."""

from __future__ import annotations

from pathlib import Path

from tests.integration.warm_site import SiteOrigin, Warming, site_origin, warming

from stoker.jobs.model import NewJob
from stoker.warm.warmer import RUN_FIELD

QUEUE = "chores"  # no worker leases it: jobs stay where the test puts them


async def bury(w: Warming, jobs: list[NewJob]) -> None:
    """Enqueue ``jobs`` and fail each once (one attempt each): dead."""
    queue = w.service.stores.queue
    await queue.enqueue(jobs)
    for job in await queue.lease(QUEUE, len(jobs), "test", 30):
        await queue.ack_failed(job.lease, f"boom {job.dedupe_key}")


async def test_dead_jobs_are_listed_paged_and_requeued_by_each_scope(tmp_path: Path) -> None:
    async with site_origin(SiteOrigin(1)) as origin_url, \
            warming(origin_url, tmp_path) as w:
        await bury(w, [NewJob(QUEUE, {RUN_FIELD: 1 + n % 2}, f"k{n}", max_attempts=1)
                       for n in range(5)])
        page = (await w.admin.get("/api/jobs", params={"limit": 2, "offset": 1})).json()
        bad_page = await w.admin.get("/api/jobs", params={"limit": 0})
        running = await w.service.stores.queue.enqueue([NewJob(QUEUE, {}, "live")])
        [held] = await w.service.stores.queue.lease(QUEUE, 1, "owner-a", 60)
        listed = (await w.admin.get("/api/jobs")).json()
        dead_ids = [job["id"] for job in listed["dead"]["jobs"]]
        not_dead = await w.admin.post("/api/jobs/requeue", json={"id": held.id})
        by_id = await w.admin.post("/api/jobs/requeue", json={"id": dead_ids[0]})
        by_key = await w.admin.post("/api/jobs/requeue", json={"key": "k0"})
        by_run = await w.admin.post("/api/jobs/requeue", json={"run": 2})
        wrong_count = await w.admin.post("/api/jobs/requeue", json={"all": True, "count": 5})
        left = (await w.admin.get("/api/jobs")).json()["dead"]["total"]
        every = await w.admin.post("/api/jobs/requeue", json={"all": True, "count": left})
        malformed = await w.admin.post("/api/jobs/requeue", json={"all": True})
        cross = await w.admin.post("/api/jobs/requeue", json={"key": "k1"},
                                   headers={"origin": "https://evil.example"})
        after = (await w.admin.get("/api/jobs")).json()
        audit = (await w.admin.get("/api/audit")).json()["records"]
    assert page["dead"]["total"] == 5 and len(page["dead"]["jobs"]) == 2
    assert page["dead"]["offset"] == 1 and bad_page.status_code == 400
    assert running == 1 and [j["owner"] for j in listed["running"]] == ["owner-a"]
    assert listed["running"][0]["lease_until"] is not None
    assert {j["last_error"] for j in listed["dead"]["jobs"]} == {f"boom k{n}" for n in range(5)}
    assert "lease_token" not in listed["running"][0]
    assert not_dead.status_code == 409 and not_dead.json()["field"] == "id"
    assert by_id.json() == {"requeued": 1}
    assert by_key.json()["requeued"] in (0, 1)  # k0 may have been the one requeued by id
    assert by_run.json()["requeued"] >= 1  # k1 and k3 are run 2's; one may be requeued
    assert wrong_count.status_code == 409 and wrong_count.json()["dead"] == left
    assert every.json() == {"requeued": left} and malformed.status_code == 400
    assert cross.status_code == 403
    assert after["dead"]["total"] == 0
    assert {c["state"] for c in after["counts"] if c["queue"] == QUEUE} <= {"pending", "running"}
    outcomes = [one["outcome"] for one in audit if one["action"] == "requeue"]
    assert outcomes.count("ok") == 4 and outcomes.count("refused") == 2
    assert outcomes.count("invalid") == 1
