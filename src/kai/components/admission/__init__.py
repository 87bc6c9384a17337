"""kai's admission webhooks (KAI's ``pkg/admission``, and the Queue / PodGroup webhooks KAI's queue-controller and
podgroup-controller serve): one pure decision per webhook, AdmissionReview request in, allowed / patch / warnings
out, served by one TLS server (``server``). ``webhooks`` is the contract with whoever registers them."""
