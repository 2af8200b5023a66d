"""A Conversation keeps one session (its sandbox, files and handles) across turns: an input file
goes in, the agent makes a table handle of it, a later turn queries it, a file it publishes
arrives here, and the program reads the handle itself.

    hull mock-model --script examples/python/report_conversation.mock.json --listen 127.0.0.1:8752 &
    HULL_PROVIDER=anthropic HULL_BASE_URL=http://127.0.0.1:8752 ANTHROPIC_API_KEY=sk-mock \\
        PYTHONPATH=python python3 examples/python/report_conversation.py
"""
import os
import shutil
import sys
import tempfile

import hull

work = tempfile.mkdtemp()
csv_path = os.path.join(work, "orders.csv")
with open(csv_path, "w") as f:
    f.write("customer,amount\nacme,120.5\nglobex,80\nacme,42\ninitech,300\n")


def got(published):
    print("  published %s (%d bytes): %s" % (published.name, len(published.data), published.description))


with hull.Conversation(on_publish=got, publish_dir=os.path.join(work, "out")) as conv:
    conv.add_input(csv_path, format="csv")  # a table handle named "orders"
    print(conv.ask("How many orders are there?").text)
    print(conv.ask("Who spent most? Write a report and publish it.").text)
    orders = conv.handles()["orders"]
    print("the program reads the same handle:", orders.summary)
    print("  rows:", orders.rows(2))
    print("  by customer:", orders.sql("SELECT customer, sum(amount) AS total FROM data GROUP BY 1 ORDER BY 2 DESC"))
    print("  saved to", orders.download(os.path.join(work, "orders.sqlite")))

with open(os.path.join(work, "out", "report.md")) as f:
    print("report:", f.read().strip())
shutil.rmtree(work)
sys.exit(0)
