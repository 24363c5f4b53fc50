package io.kafkaiq.junit;

/**
 * The broker did not start, or its control API refused a call: {@link #status()} is the HTTP status (0 when no
 * answer came, e.g. a start that failed) and {@link #brokerMessage()} the broker's own words.
 */
public class KafkaIQException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final String brokerMessage;

    public KafkaIQException(String message) {
        this(message, 0, "", null);
    }

    public KafkaIQException(String message, Throwable cause) {
        this(message, 0, "", cause);
    }

    public KafkaIQException(String message, int status, String brokerMessage, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.brokerMessage = brokerMessage;
    }

    /** The HTTP status the control API answered, 0 if it did not answer. */
    public int status() {
        return status;
    }

    /** The "error" the control API answered, "" if none. */
    public String brokerMessage() {
        return brokerMessage;
    }
}
