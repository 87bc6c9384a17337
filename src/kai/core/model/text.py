"""Numbers rendered the way KAI's Go code renders them in messages, so our messages read the same."""


def go_float(value: float) -> str:
    """Go's ``%v`` for a float64: shortest form, no trailing ``.0``."""
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def humanize(value: float, unit: float = 1.0) -> str:
    """KAI's HumanizeResource: -1 is "Unlimited", else at most 3 decimals with trailing zeros trimmed."""
    if value == -1:
        return "Unlimited"
    text = f"{value / unit:.3f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def amount_of(value: float, unit: str, per_unit: float = 1.0) -> str:
    """A humanized amount with its unit, singular for one: "1 GPU", "6 GPUs", "2.5 cores"."""
    text = humanize(value, per_unit)
    return f"{text} {unit.removesuffix('s') if text == '1' else unit}"


MILLI_CPU_PER_CORE = 1000.0
BYTES_PER_GB = 1e9
