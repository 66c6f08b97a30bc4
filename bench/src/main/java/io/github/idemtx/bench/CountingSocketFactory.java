package io.github.idemtx.bench;

import java.io.FilterInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.concurrent.atomic.LongAdder;
import javax.net.SocketFactory;

/**
 * A pgjdbc {@code socketFactory} that counts what crosses the wire: round trips (a read that
 * follows a write on the same socket: the client sent something and waits for the answer), bytes
 * sent and bytes received. pgjdbc buffers its own streams, so these counters are touched once per
 * flush or buffer fill, not per byte.
 *
 * <p>Counters are global: the bench attributes them to the one strategy running at the time.
 */
public final class CountingSocketFactory extends SocketFactory {

    private static final LongAdder ROUND_TRIPS = new LongAdder();
    private static final LongAdder BYTES_OUT = new LongAdder();
    private static final LongAdder BYTES_IN = new LongAdder();

    /** pgjdbc instantiates this reflectively. */
    public CountingSocketFactory() {}

    /** Round trips, bytes sent, bytes received, so far. */
    static long[] snapshot() {
        return new long[] {ROUND_TRIPS.sum(), BYTES_OUT.sum(), BYTES_IN.sum()};
    }

    @Override
    public Socket createSocket() {
        return new CountingSocket();
    }

    @Override
    public Socket createSocket(String host, int port) throws IOException {
        Socket s = new CountingSocket();
        s.connect(new InetSocketAddress(host, port));
        return s;
    }

    @Override
    public Socket createSocket(String host, int port, InetAddress localHost, int localPort) throws IOException {
        Socket s = new CountingSocket();
        s.bind(new InetSocketAddress(localHost, localPort));
        s.connect(new InetSocketAddress(host, port));
        return s;
    }

    @Override
    public Socket createSocket(InetAddress host, int port) throws IOException {
        Socket s = new CountingSocket();
        s.connect(new InetSocketAddress(host, port));
        return s;
    }

    @Override
    public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort)
            throws IOException {
        Socket s = new CountingSocket();
        s.bind(new InetSocketAddress(localAddress, localPort));
        s.connect(new InetSocketAddress(address, port));
        return s;
    }

    /** A socket whose streams count; used by one thread at a time, like the connection it carries. */
    private static final class CountingSocket extends Socket {
        private boolean wrote;
        private InputStream in;
        private OutputStream out;

        @Override
        public synchronized InputStream getInputStream() throws IOException {
            if (in == null) {
                InputStream raw = super.getInputStream();
                in = new FilterInputStream(raw) {
                    @Override
                    public int read() throws IOException {
                        turn();
                        int b = raw.read();
                        if (b >= 0) {
                            BYTES_IN.increment();
                        }
                        return b;
                    }

                    @Override
                    public int read(byte[] buf, int off, int len) throws IOException {
                        turn();
                        int n = raw.read(buf, off, len);
                        if (n > 0) {
                            BYTES_IN.add(n);
                        }
                        return n;
                    }
                };
            }
            return in;
        }

        @Override
        public synchronized OutputStream getOutputStream() throws IOException {
            if (out == null) {
                OutputStream raw = super.getOutputStream();
                out = new FilterOutputStream(raw) {
                    @Override
                    public void write(int b) throws IOException {
                        wrote = true;
                        BYTES_OUT.increment();
                        raw.write(b);
                    }

                    @Override
                    public void write(byte[] buf, int off, int len) throws IOException {
                        wrote = true;
                        BYTES_OUT.add(len);
                        raw.write(buf, off, len);
                    }
                };
            }
            return out;
        }

        private void turn() {
            if (wrote) {
                wrote = false;
                ROUND_TRIPS.increment();
            }
        }
    }
}
