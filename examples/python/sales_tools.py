"""Plain functions as an agent's tools (sheath style): hull.solve() offers them to the model with
schemas made from their type hints and docstrings, and runs them here when the model calls them.

    hull mock-model --script examples/python/sales_tools.mock.json --listen 127.0.0.1:8751 &
    HULL_PROVIDER=anthropic HULL_BASE_URL=http://127.0.0.1:8751 ANTHROPIC_API_KEY=sk-mock \\
        PYTHONPATH=python python3 examples/python/sales_tools.py
"""
from typing import Literal, Optional

import hull

SALES = {("north", 2025): 120, ("south", 2025): 95, ("north", 2024): 100, ("south", 2024): 90}


def query_sales(region: str, year: int = 2025, unit: Literal["units", "eur"] = "units") -> dict:
    """Total sales of a region in a year.

    Args:
        region: north or south
        year: the year
        unit: units sold, or their value in euros
    """
    total = SALES[(region, year)]
    return {"region": region, "year": year, unit: total if unit == "units" else total * 20}


def region_manager(region: str) -> Optional[str]:
    """Who manages a region (None when nobody does)."""
    return {"north": "Ada"}.get(region)


def show(event):
    if event["type"] in ("agent.custom_tool_use", "agent.tool_use"):
        print("  [tool] %s %s" % (event["name"], event.get("input")))


if __name__ == "__main__":
    with hull.solve("Which region grew most from 2024 to 2025, and who manages it?",
                    tools=[query_sales, region_manager], on_status=show,
                    agent_instructions="Answer in one sentence.") as result:
        print(result.text)
        print("tokens:", result.usage)
