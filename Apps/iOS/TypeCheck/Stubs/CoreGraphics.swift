// Stand-in for the parts of CoreGraphics our iOS files use. `CGFloat`, `CGSize`,
// `CGPoint` and `CGRect` come from swift-corelibs-foundation, as on Apple platforms they
// come through Foundation.
@_exported import Foundation   // as the framework's umbrella header imports Foundation

/// developer.apple.com/documentation/corefoundation/cgaffinetransform —
/// `init(scaleX: CGFloat, y: CGFloat)`.
public struct CGAffineTransform: Equatable, Sendable {
    public var a: CGFloat, b: CGFloat, c: CGFloat, d: CGFloat, tx: CGFloat, ty: CGFloat
    public init(a: CGFloat, b: CGFloat, c: CGFloat, d: CGFloat, tx: CGFloat, ty: CGFloat) {
        (self.a, self.b, self.c, self.d, self.tx, self.ty) = (a, b, c, d, tx, ty)
    }
    public init(scaleX sx: CGFloat, y sy: CGFloat) { self.init(a: sx, b: 0, c: 0, d: sy, tx: 0, ty: 0) }
    public static let identity = CGAffineTransform(a: 1, b: 0, c: 0, d: 1, tx: 0, ty: 0)
}
