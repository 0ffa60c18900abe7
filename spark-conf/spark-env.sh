#!/usr/bin/env bash
# Environment for Spark processes on the driver node (copy into $SPARK_HOME/conf/spark-env.sh,
# or export these in the shell that runs spark-submit / pyspark in client mode).
# Executors get theirs from spark.executorEnv.* in spark-defaults.conf.

# The Python that has delta_pyds (pip install delta_pyds) or its dependencies (--py-files).
# export PYSPARK_PYTHON=/opt/venv/bin/python
# export PYSPARK_DRIVER_PYTHON=/opt/venv/bin/python

# Object-store credentials for the driver's planning and commit workers (fsspec reads
# FSSPEC_<PROTOCOL>_<PARAMETER>; each backend also has its own variables and credential
# chains: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_ENDPOINT_URL for S3,
# AZURE_STORAGE_ACCOUNT_NAME / AZURE_STORAGE_ACCOUNT_KEY for Azure,
# GOOGLE_APPLICATION_CREDENTIALS for GCS). Keep real secrets out of version control.
# export FSSPEC_S3_KEY=AKIA...
# export FSSPEC_S3_SECRET=...
# export FSSPEC_S3_ENDPOINT_URL=https://s3.eu-west-1.amazonaws.com
# export FSSPEC_ABFS_ACCOUNT_NAME=myaccount
# export FSSPEC_ABFS_SAS_TOKEN=sv=...
# export FSSPEC_GCS_TOKEN=/etc/gcs/service-account.json
