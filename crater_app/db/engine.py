"""Database engine: SQLite (WAL) by default, PostgreSQL via ``CRATER_DATABASE_URL``."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import create_engine


def make_engine(url: str) -> Engine:
    """Create an engine for ``url``.

    SQLite: WAL journal, ``synchronous=NORMAL``, 5 s busy timeout, foreign keys on; the parent folder is
    created. PostgreSQL: a pool of 10 (+20 overflow) with pre-ping.
    """
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, pool_size=20, max_overflow=20)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record) -> None:  # pragma: no cover - exercised by every SQLite test
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()
            # pysqlite's implicit transactions are off; the "begin" hook below issues BEGIN itself.
            dbapi_conn.isolation_level = None

        @event.listens_for(engine, "begin")
        def _begin(conn) -> None:  # pragma: no cover
            conn.exec_driver_sql("BEGIN")

        return engine
    return create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)


def is_sqlite(engine: Engine) -> bool:
    """Whether ``engine`` talks to SQLite."""
    return engine.dialect.name == "sqlite"
