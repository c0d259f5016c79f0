extension MutableCollection where Self: RandomAccessCollection, Index == Int {
    /// Sorts the elements in place, not stably, with no buffer: `sort()` is stable and takes a
    /// buffer of half the elements, which for the writer's millions of 16-byte intervals is
    /// megabytes at its peak. Introsort: quicksort on the median of three, heapsort past a depth of
    /// 2 log2 n (so hostile orders stay O(n log n)), insertion sort for short runs.
    mutating func sortInPlaceUnstably(by areInIncreasingOrder: (Element, Element) -> Bool) {
        guard count > 1 else { return }
        var depthLimit = 2 * (Int.bitWidth - count.leadingZeroBitCount)
        var stack: [(low: Int, high: Int, depth: Int)] = [(startIndex, endIndex - 1, depthLimit)]
        while let run = stack.popLast() {
            var low = run.low
            var high = run.high
            depthLimit = run.depth
            while high - low >= 16 {
                if depthLimit == 0 {
                    heapSort(low, high, areInIncreasingOrder)
                    low = high
                    break
                }
                depthLimit -= 1
                // Median of three to the front, then Hoare's partition around it.
                let middle = low + (high - low) / 2
                if areInIncreasingOrder(self[middle], self[low]) { swapAt(middle, low) }
                if areInIncreasingOrder(self[high], self[low]) { swapAt(high, low) }
                if areInIncreasingOrder(self[high], self[middle]) { swapAt(high, middle) }
                swapAt(low, middle)
                let pivot = self[low]
                var left = low
                var right = high + 1
                while true {
                    repeat { left += 1 } while left <= high && areInIncreasingOrder(self[left], pivot)
                    repeat { right -= 1 } while areInIncreasingOrder(pivot, self[right])
                    if left >= right { break }
                    swapAt(left, right)
                }
                swapAt(low, right)
                // The smaller side goes on the stack, the larger is looped on: the stack stays short.
                if right - low < high - right {
                    stack.append((right + 1, high, depthLimit))
                    high = right - 1
                } else {
                    stack.append((low, right - 1, depthLimit))
                    low = right + 1
                }
            }
            if low < high {
                for index in (low + 1)...high {
                    let element = self[index]
                    var position = index
                    while position > low && areInIncreasingOrder(element, self[position - 1]) {
                        self[position] = self[position - 1]
                        position -= 1
                    }
                    self[position] = element
                }
            }
        }
    }

    /// Heapsort of `low...high`.
    private mutating func heapSort(_ low: Int, _ high: Int, _ areInIncreasingOrder: (Element, Element) -> Bool) {
        let count = high - low + 1
        func siftDown(_ start: Int, _ end: Int) {
            var root = start
            while 2 * root + 1 < end {
                var child = 2 * root + 1
                if child + 1 < end && areInIncreasingOrder(self[low + child], self[low + child + 1]) { child += 1 }
                guard areInIncreasingOrder(self[low + root], self[low + child]) else { return }
                swapAt(low + root, low + child)
                root = child
            }
        }
        var start = count / 2
        while start > 0 {
            start -= 1
            siftDown(start, count)
        }
        var end = count
        while end > 1 {
            end -= 1
            swapAt(low, low + end)
            siftDown(0, end)
        }
    }
}
