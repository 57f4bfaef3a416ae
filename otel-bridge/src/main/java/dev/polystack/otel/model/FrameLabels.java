package dev.polystack.otel.model;

import dev.polystack.plugin.api.Frame;

/**
 * The one text label of a frame that folded, dump and html outputs share:
 * <ul>
 *   <li>native/kernel: the symbol, else {@code module+0xOFFSET} (file offset), else the address;
 *   <li>runtime frames (e.g. luajit): {@code NAME (FILE:LINE)}, the name a Lua traceback would
 *       show and the line executing;
 *   <li>errors: {@code [error: reason]}.
 * </ul>
 */
public final class FrameLabels {
  private FrameLabels() {}

  public static String label(Frame frame, Recording recording) {
    if (frame.isError()) {
      return "[error: " + frame.function() + "]";
    }
    if (Frame.NATIVE.equals(frame.type()) || Frame.KERNEL.equals(frame.type())) {
      if (!frame.function().isEmpty()) {
        return frame.function();
      }
      return recording.moduleAt(frame.address())
          .map(m -> m.baseName() + "+0x" + Long.toHexString(m.fileOffsetOf(frame.address())))
          .orElse("0x" + Long.toHexString(frame.address()));
    }
    String name = frame.function().isEmpty() ? "?" : frame.function();
    if (frame.file().isEmpty()) {
      return name;
    }
    return name + " (" + frame.file() + ":" + frame.line() + ")";
  }
}
