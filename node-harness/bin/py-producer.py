#!/usr/bin/env python3
"""A second real producer: BullMQ's Python port adds the jobs it reads on stdin.

Usage: py-producer.py <queue>  (env REDIS_URL, RINGBACK_PREFIX; PYTHONPATH holding `bullmq`).
Stdin: a JSON array of {"name", "data" (the job data as JSON text), "opts"}. The data is parsed by
Python's json, so an integer keeps every digit (a Node producer would send the nearest double).
Prints the added jobs' ids as one JSON array.
"""
import asyncio
import json
import os
import sys

from bullmq import Queue


async def main() -> None:
    queue = Queue(sys.argv[1], {"connection": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379"), "prefix": os.environ.get("RINGBACK_PREFIX", "bull")})
    try:
        ids = []
        for job in json.load(sys.stdin):
            added = await queue.add(job["name"], json.loads(job["data"]), job.get("opts", {}))
            ids.append(added.id)
        print(json.dumps(ids))
    finally:
        await queue.close()


asyncio.run(main())
