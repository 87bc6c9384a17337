"""`kai dashboard` refuses what it cannot serve with one line: an address that is not HOST:PORT, a port taken, a
refresh that is not a duration."""

import socket
from pathlib import Path

from click.testing import CliRunner
from dashboard_support import cluster_file

from kai.cli.main import main


def test_what_cannot_be_served_is_one_line(tmp_path: Path) -> None:
    path = str(cluster_file(tmp_path))
    runner = CliRunner()
    result = runner.invoke(main, ["dashboard", "-f", path, "--address", "localhost"])
    assert result.exit_code == 2 and "--address 'localhost': expected HOST:PORT" in result.output
    result = runner.invoke(main, ["dashboard", "-f", path, "--refresh", "soon"])
    assert result.exit_code == 2 and "--refresh" in result.output
    result = runner.invoke(main, ["dashboard", "-f", path, "--refresh", "0s"])
    assert result.exit_code == 2 and "--refresh 0s: give a time above 0, such as 5s" in result.output
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = runner.invoke(main, ["dashboard", "-f", path, "--address", f"127.0.0.1:{port}"])
    assert result.exit_code == 1 and f"cannot serve the dashboard (--address) on 127.0.0.1:{port}" in result.output
    assert "Traceback" not in result.output
