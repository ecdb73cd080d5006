"""catalogue.json at the top of the repository: the scenarios, their
containers, titles and order."""

import json
import os

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                    "catalogue.json")


def load():
    with open(PATH, encoding="utf-8") as f:
        return json.load(f)
