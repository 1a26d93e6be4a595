"""Peer for bench/ingest.py: a plain FastAPI endpoint that only parses the body."""

from __future__ import annotations

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict

app = FastAPI()


class ResponseIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: int
    token: str | None = None
    reports: dict[str, int]


@app.post("/api/surveys/{survey_id}/responses", status_code=201)
async def parse_only(survey_id: str, body: ResponseIn) -> dict[str, int]:
    return {"stored": 0}


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}
