/* Android-style JNI library fixture (aarch64-linux-android21, -shared -nostdlib): exported
 * Java_* entry points calling inline helpers, like an app's native library. No NDK sysroot
 * is needed: the library uses no libc. */

typedef int jint;
typedef struct JNIEnvOpaque *JNIEnvPtr;
typedef struct JObjectOpaque *jobject;

static inline __attribute__((always_inline)) jint clamp(jint value, jint low, jint high)
{
    return value < low ? low : (value > high ? high : value);
}

static inline jint scale(jint value, jint factor)
{
    return clamp(value * factor, -100000, 100000);
}

static inline jint accumulate(const jint *values, jint count, jint factor)
{
    jint total = 0;
    for (jint i = 0; i < count; i++)
        total += scale(values[i], factor);
    return total;
}

__attribute__((visibility("default"))) jint
Java_com_example_fixture_NativeLib_compute(JNIEnvPtr env, jobject self, jint seed)
{
    (void)env;
    (void)self;
    jint values[8];
    for (jint i = 0; i < 8; i++)
        values[i] = seed + i * i;
    return accumulate(values, 8, seed & 7);
}

__attribute__((visibility("default"))) jint
Java_com_example_fixture_NativeLib_crash(JNIEnvPtr env, jobject self, const jint *slot)
{
    (void)env;
    (void)self;
    return scale(*slot, 3); /* the crash line when slot is null */
}
