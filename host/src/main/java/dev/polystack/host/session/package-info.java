/**
 * The sessions the commands run: {@code record} and {@code top} ({@link
 * dev.polystack.host.session.RecordSession}, which chooses the backend's session), {@code dump},
 * {@code snapshot} and {@code analyze}; and the processing that turns their samples into a
 * recording.
 */
package dev.polystack.host.session;
