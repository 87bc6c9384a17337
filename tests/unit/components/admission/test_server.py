"""The webhooks' TLS server on a real socket: AdmissionReviews answered concurrently, a rotated certificate served
from the next connection on, a half-written rotation ignored, a graceful stop; and the contract the operator renders."""

import datetime as dt
import hashlib
import http.client
import ipaddress
import json
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from webhook_support import pod

from kai.components.admission import webhooks
from kai.components.admission.component import decisions, handlers
from kai.components.admission.queues import QueueCache
from kai.components.admission.server import CertificateFiles, WebhookServer
from kai.components.admission.settings import AdmissionSettings


def write_certificate(directory: Path, name: str = "kai-admission") -> bytes:
    """A self-signed serving certificate for 127.0.0.1 as tls.crt/tls.key; returns its DER bytes."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tls.key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    (directory / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert.public_bytes(serialization.Encoding.DER)


def client(port: int) -> http.client.HTTPSConnection:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the tests compare the certificate served instead
    return http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)


def review(obj: dict, uid: str = "u1") -> bytes:
    request = {"uid": uid, "kind": {"kind": "Pod"}, "operation": "CREATE", "namespace": "ns", "object": obj}
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()


def post(connection: http.client.HTTPSConnection, path: str, body: bytes) -> tuple[int, bytes]:
    connection.request("POST", path + "?timeout=10s", body, {"Content-Type": "application/json"})
    answer = connection.getresponse()
    return answer.status, answer.read()


def served(connection: http.client.HTTPSConnection) -> bytes:
    assert connection.sock is not None
    return hashlib.sha256(connection.sock.getpeercert(binary_form=True)).digest()


@pytest.fixture
def server(tmp_path: Path):
    write_certificate(tmp_path)
    choose = decisions(AdmissionSettings(gpu_sharing_enabled=True), QueueCache(lambda _: None))
    running = WebhookServer(("127.0.0.1", 0), CertificateFiles(tmp_path), handlers(choose))
    running.start()
    yield running
    running.stop(1)


def test_reviews_are_answered_with_the_decision(server: WebhookServer) -> None:
    connection = client(server.port)
    status, body = post(connection, webhooks.VALIDATE_POD, review(pod({"gpu-fraction": "1.5"}), uid="abc"))
    answer = json.loads(body)["response"]
    assert status == 200 and answer["uid"] == "abc" and answer["allowed"] is False
    assert answer["status"]["code"] == 422 and "gpu-fraction" in answer["status"]["message"]
    status, body = post(connection, webhooks.MUTATE_POD, review(pod({"gpu-fraction": "0.5"})))
    assert json.loads(body)["response"]["patchType"] == "JSONPatch"  # same keep-alive connection
    assert post(connection, "/elsewhere", b"{}")[0] == 404
    assert post(connection, webhooks.VALIDATE_POD, b"not json")[0] == 400


def test_concurrent_requests_are_answered_side_by_side(server: WebhookServer) -> None:
    def one(i: int) -> str:
        connection = client(server.port)
        _, body = post(connection, webhooks.VALIDATE_POD, review(pod(), uid=f"u{i}"))
        connection.close()
        return str(json.loads(body)["response"]["uid"])

    with ThreadPoolExecutor(16) as pool:
        assert sorted(pool.map(one, range(64))) == sorted(f"u{i}" for i in range(64))


def test_a_rotated_certificate_is_served_from_the_next_connection_on(tmp_path: Path, server: WebhookServer) -> None:
    first = client(server.port)
    post(first, webhooks.VALIDATE_POD, review(pod()))
    before = served(first)
    new = hashlib.sha256(write_certificate(tmp_path, "rotated")).digest()
    second = client(server.port)
    post(second, webhooks.VALIDATE_POD, review(pod()))
    assert served(second) == new != before
    assert post(first, webhooks.VALIDATE_POD, review(pod()))[0] == 200  # an open connection keeps its session
    (tmp_path / "tls.key").write_bytes(b"half a rotation")
    third = client(server.port)
    post(third, webhooks.VALIDATE_POD, review(pod()))
    assert served(third) == new  # the last pair that loaded


def test_no_certificate_means_not_ready_and_no_handshake(tmp_path: Path) -> None:
    certificates = CertificateFiles(tmp_path / "empty")
    assert certificates.check() == (False, f"cannot read {tmp_path / 'empty' / 'tls.crt'}: No such file or directory")
    running = WebhookServer(("127.0.0.1", 0), certificates, {})
    running.start()
    try:
        with pytest.raises((ssl.SSLError, ConnectionError, http.client.RemoteDisconnected)):
            post(client(running.port), "/", b"")
        write_certificate(tmp_path / "empty")
        assert certificates.check()[0]
        assert post(client(running.port), "/", b"")[0] == 404
    finally:
        running.stop(1)


def test_a_graceful_stop_finishes_requests_in_progress_and_closes_idle_ones(tmp_path: Path) -> None:
    write_certificate(tmp_path)
    entered, release = threading.Event(), threading.Event()

    def slow(body: bytes) -> bytes:
        entered.set()
        release.wait(10)
        return b"{}"

    running = WebhookServer(("127.0.0.1", 0), CertificateFiles(tmp_path), {"/slow": slow, "/fast": lambda b: b"{}"})
    running.start()
    idle = client(running.port)
    post(idle, "/fast", b"")
    results: list[int] = []
    busy = client(running.port)
    worker = threading.Thread(target=lambda: results.append(post(busy, "/slow", b"")[0]))
    worker.start()
    assert entered.wait(10)
    stopped: list[int] = []
    stopper = threading.Thread(target=lambda: stopped.append(running.stop(10)))
    stopper.start()
    deadline = time.monotonic() + 10
    while not stopped and time.monotonic() < deadline and len(running._server.connections) > 1:
        time.sleep(0.01)
    assert len(running._server.connections) == 1  # the idle one is closed, the busy one waits
    release.set()
    worker.join(10)
    stopper.join(10)
    assert results == [200] and stopped == [0]
    with pytest.raises((ConnectionError, http.client.RemoteDisconnected, ssl.SSLError, OSError)):
        post(idle, "/fast", b"")


def test_the_contract_renders_kai_v017s_webhook_configurations() -> None:
    rendered = webhooks.configurations(webhooks.service_client("Q0E="), pod_labels={"team": "a"})
    by_name = {c["metadata"]["name"]: c for c in rendered}
    assert sorted(by_name) == [
        "kai-podgroup-validation-v2alpha2", "kai-queue-validation-v2", "mutating-kai-admission",
        "validating-kai-admission",
    ]  # fmt: skip
    mutating = by_name["mutating-kai-admission"]
    assert mutating["kind"] == "MutatingWebhookConfiguration"
    (hook,) = mutating["webhooks"]
    assert hook["name"] == "admission.kai-scheduler.svc"
    assert hook["clientConfig"] == {
        "service": {"namespace": "kai-scheduler", "name": "admission", "path": "/mutate--v1-pod", "port": 443},
        "caBundle": "Q0E=",
    }
    assert hook["matchConditions"] == [
        {"name": "scheduler-name-match", "expression": "object.spec.schedulerName == 'kai-scheduler'"}
    ]
    assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system", "kai-scheduler"]
    assert hook["objectSelector"] == {"matchLabels": {"team": "a"}}
    assert (hook["failurePolicy"], hook["sideEffects"], hook["reinvocationPolicy"]) == ("Fail", "None", "IfNeeded")
    pod_hook, resize_hook, topology_hook = by_name["validating-kai-admission"]["webhooks"]
    assert pod_hook["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert resize_hook["name"] == "podresize.admission.kai-scheduler.svc"  # KAI #2021
    assert (resize_hook["rules"][0]["resources"], resize_hook["rules"][0]["operations"]) == (
        ["pods/resize"],
        ["UPDATE"],
    )
    assert resize_hook["failurePolicy"] == "Ignore"  # best effort: never blocks a resize when kai cannot answer
    assert resize_hook["matchConditions"] == hook["matchConditions"]
    assert resize_hook["objectSelector"] == {"matchLabels": {"team": "a"}}
    assert "matchConditions" not in topology_hook and topology_hook["rules"][0]["scope"] == "Cluster"
    paths = {w["clientConfig"]["service"]["path"] for c in rendered for w in c["webhooks"]}
    choose = decisions(AdmissionSettings(), QueueCache(lambda _: None))
    assert paths == {w.path for w in webhooks.WEBHOOKS} == set(choose)
    url = webhooks.url_client("https://127.0.0.1:9443/", "Q0E=")(webhooks.VALIDATE_QUEUE)
    assert url == {"url": "https://127.0.0.1:9443/validate-scheduling-run-ai-v2-queue", "caBundle": "Q0E="}
