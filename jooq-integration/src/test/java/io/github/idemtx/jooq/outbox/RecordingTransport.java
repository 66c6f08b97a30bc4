package io.github.idemtx.jooq.outbox;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** A transport that records what it is handed, failing while told to. */
class RecordingTransport implements OutboxTransport {

    final List<OutboxDelivery> sent = new CopyOnWriteArrayList<>();
    volatile Exception failWith;

    @Override
    public void send(OutboxDelivery delivery) throws Exception {
        Exception f = failWith;
        if (f != null) {
            throw f;
        }
        sent.add(delivery);
    }

    List<String> names() {
        return sent.stream().map(OutboxDelivery::name).toList();
    }
}
