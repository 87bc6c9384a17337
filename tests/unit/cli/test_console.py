"""Where the insight commands print: a console as wide as asked, else the terminal, else wide for a pipe."""

from click.testing import CliRunner

from kai.cli.console import PIPE_WIDTH, console
from kai.cli.main import main


def test_a_width_given_is_the_width() -> None:
    assert console(100).width == 100
    assert console(100, wide=True).width == 100


def test_wide_output_is_pipe_wide_unless_a_width_is_given(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert console(wide=True).width == PIPE_WIDTH
    assert console().width == 100  # the terminal's (COLUMNS stands for it)


def test_output_help_names_only_the_formats_a_command_takes() -> None:
    explain = CliRunner().invoke(main, ["explain", "--help"]).output
    queues = CliRunner().invoke(main, ["queues", "--help"]).output
    assert "wide" not in explain.split("--output", 1)[1].split("--width", 1)[0]
    assert "wide: every column" in queues
