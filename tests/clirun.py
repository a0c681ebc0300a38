"""What the CLI tests share: a user error is status 2 and its lines on stderr, never a traceback."""

from __future__ import annotations

from click.testing import Result


def assert_user_error(result: Result, *phrases: str) -> list[str]:
    """Status 2, nothing on stdout, no traceback; returns the stderr lines."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit)
    assert result.stdout == ""
    assert "Traceback" not in result.output
    for phrase in phrases:
        assert phrase in result.stderr
    return result.stderr.splitlines()
