"""S3 helpers for the generation job. Credentials come from the standard AWS chain
(environment, ~/.aws/credentials, instance role); nothing secret is stored here."""
import os

BUCKET = os.environ.get("S3_BUCKET", "train-dflash-qwen36-27b")
ENDPOINT = os.environ.get("S3_ENDPOINT_URL")  # e.g. a MinIO/R2 endpoint; None = AWS


def client():
    import boto3  # imported lazily: the generation script runs without it when --no-upload

    return boto3.client("s3", endpoint_url=ENDPOINT)


def upload_file(path, key, bucket=BUCKET):
    client().upload_file(path, bucket, key)
    return "s3://%s/%s" % (bucket, key)


def list_prefix(prefix, bucket=BUCKET):
    """(key, size) of every object under prefix, following continuation tokens."""
    paginator = client().get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            yield obj["Key"], obj["Size"]


def exists(key, bucket=BUCKET):
    try:
        client().head_object(Bucket=bucket, Key=key)
        return True
    except Exception:  # noqa: BLE001 - botocore ClientError 404
        return False
