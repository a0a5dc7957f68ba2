"""Interop with the official Python Cosmos DB SDK (azure-cosmos 4.x): N If-Match increments of
the field "n" of one item, run concurrently with azstore's update() writers on the same item.

    cosmos_interop.py ENDPOINT KEY DATABASE CONTAINER ITEM INCREMENTS

The item's partition key value is ITEM (container partition key path /pk). Each increment
reads the item, adds 1 to "n" and replaces it with If-Match on the _etag it read; on 412 it
starts over. Endpoint discovery is off: the local server advertises https:// locations even
when it serves plain HTTP. Prints {"increments": N, "conflicts": C} as JSON.
"""

import json
import sys

from azure.core import MatchConditions
from azure.cosmos import CosmosClient, exceptions


def main():
    endpoint, key, database, container, item, increments = sys.argv[1:7]
    client = CosmosClient(endpoint, credential=key, enable_endpoint_discovery=False)
    items = client.get_database_client(database).get_container_client(container)
    conflicts = 0
    for _ in range(int(increments)):
        while True:
            try:
                doc = items.read_item(item=item, partition_key=item)
            except exceptions.CosmosResourceNotFoundError:
                try:
                    items.create_item({"id": item, "pk": item, "n": 1})
                    break
                except exceptions.CosmosResourceExistsError:
                    conflicts += 1
                    continue
            doc["n"] = doc.get("n", 0) + 1
            try:
                items.replace_item(
                    item=item,
                    body=doc,
                    etag=doc["_etag"],
                    match_condition=MatchConditions.IfNotModified,
                )
                break
            except exceptions.CosmosAccessConditionFailedError:
                conflicts += 1
    print(json.dumps({"increments": int(increments), "conflicts": conflicts}))


if __name__ == "__main__":
    main()
