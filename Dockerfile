# The kai image: one `kai` entry point for every component (kai operator, scheduler, binder, podgrouper,
# podgroup-controller, queue-controller, admission, apply-crds), run as a non-root user. The chart runs it as
# <global.registry>/kai:<tag>; the CRD upgrade hook applies /kai/crds.
#
#   docker build -t registry/local/kai-scheduler/kai:0.1.0 .
#
# The base is pinned to an exact Debian point release (bump both stages together); Python is Debian's (3.11).
# hack/image.sh (`make image`) builds the same image without a Docker engine or registry: keep the two in step (Debian
# release and packages, the wheels, user 10000, /opt/kai, /kai/crds, ENTRYPOINT/CMD/PATH).
FROM debian:12.12-slim AS wheels
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/kai
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
# kai's wheel and the exact dependency versions pyproject.toml pins, built once, installed offline below.
RUN /opt/kai/bin/pip install --no-cache-dir --upgrade pip && /opt/kai/bin/pip wheel --no-cache-dir --wheel-dir /wheels .

FROM debian:12.12-slim
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 10000 --user-group --no-create-home --shell /usr/sbin/nologin kai && python3 -m venv /opt/kai
COPY --from=wheels /wheels /tmp/wheels
RUN /opt/kai/bin/pip install --no-cache-dir --no-index --find-links /tmp/wheels kai && rm -rf /tmp/wheels
ENV PATH=/opt/kai/bin:$PATH
COPY deploy/helm/kai-scheduler/crds /kai/crds
USER 10000:10000
ENTRYPOINT ["kai"]
CMD ["--help"]
