package dev.polystack.host.bpf;

import jnr.ffi.Pointer;
import jnr.ffi.annotations.Delegate;
import jnr.ffi.annotations.SaveError;

/**
 * Raw jnr-ffi binding to libbpf 1.x ({@code libbpf.so.1}). Internal to this package; public only
 * because jnr generates the implementation in its own class loader.
 *
 * <p>libbpf 1.x returns {@code -errno} from int functions and NULL with errno set from pointer
 * functions; errno is saved so {@link Bpf#errno()} sees this call's value.
 */
@SaveError
public interface LibBpf {
  Pointer bpf_object__open_mem(Pointer buffer, long size, Pointer opts);

  int bpf_object__load(Pointer object);

  void bpf_object__close(Pointer object);

  Pointer bpf_object__find_program_by_name(Pointer object, String name);

  Pointer bpf_object__find_map_by_name(Pointer object, String name);

  int bpf_program__fd(Pointer program);

  int bpf_program__set_log_buf(Pointer program, Pointer buffer, long size);

  int bpf_program__set_autoload(Pointer program, boolean autoload);

  int bpf_program__set_expected_attach_type(Pointer program, int type);

  int bpf_map__fd(Pointer map);

  int bpf_map__set_max_entries(Pointer map, int maxEntries);

  int bpf_map_update_elem(int fd, Pointer key, Pointer value, long flags);

  int bpf_map_lookup_elem(int fd, Pointer key, Pointer value);

  int bpf_map_delete_elem(int fd, Pointer key);

  int bpf_map_get_next_key(int fd, Pointer key, Pointer nextKey);

  int bpf_raw_tracepoint_open(String name, int programFd);

  int bpf_obj_get_info_by_fd(int fd, Pointer info, Pointer infoLength);

  Pointer ring_buffer__new(int mapFd, SampleCallback callback, Pointer context, Pointer opts);

  int ring_buffer__poll(Pointer ring, int timeoutMillis);

  int ring_buffer__consume(Pointer ring);

  void ring_buffer__free(Pointer ring);

  int libbpf_num_possible_cpus();

  int libbpf_strerror(int error, Pointer buffer, long size);

  Pointer libbpf_set_print(PrintCallback callback);

  /** {@code ring_buffer_sample_fn}: a negative return stops the poll (the record is consumed). */
  interface SampleCallback {
    @Delegate
    int sample(Pointer context, Pointer data, long size);
  }

  /** {@code libbpf_print_fn_t}; {@code args} is the va_list, only valid during the call. */
  interface PrintCallback {
    @Delegate
    int print(int level, Pointer format, Pointer args);
  }

  /** The one libc function the print callback needs; libc is bound separately from libbpf. */
  interface Format {
    int vsnprintf(Pointer buffer, long size, Pointer format, Pointer args);
  }
}
